"""The report's numbers as tidy tables for pandas and R: one row per observation, one column per
variable, numbers as numbers (proportions as fractions in [0, 1], an infinite odds ratio as the
float ``inf``, an undefined statistic as an empty field), never the display strings of report.md.

:func:`tidy_tables` maps a table's name — the same name the display table carries
(:attr:`contam.harness.report.texts.format.Table.name`), so ``tables/gap_by_model.csv`` holds the numbers of
``tables/gap_by_model.tex`` — to its rows. The tables in :data:`TEXT_ONLY` have no display twin
(numbers the report states in a paragraph or a row of another table).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from contam.harness.report.analysis import LABELS, METRICS
from contam.harness.report.model import Report, Rows
from contam.harness.report.texts.study import TIDY as STUDY_TIDY
from contam.harness.report.parts.rule_metrics import RULE_METRICS
from contam.harness.report.texts.rule_metrics import tidy as rule_metric_tidy
from contam.harness.report.parts.validation import TIDY as VALIDATION_TIDY
from contam.metrics.probe_registry import PROBES, resolve

__all__ = ["tidy_tables", "TEXT_ONLY"]

# The tables without a display twin: what each holds (tables/index.csv says it).
TEXT_ONLY = {
    "pooled_odds_ratio": "Contamination across models: the Mantel–Haenszel odds ratio with its interval, the "
                         "CMH and Breslow–Day (Tarone) statistics, df, p and log10 p",
    "rank_correlation": "Scoring regimes: Spearman ρ of each regime's per-model aggregate with human accuracy",
    "judge_gap_by_model": "The contamination gap under the LLM judge's labels",
}

def tidy_tables(report: Report) -> dict[str, Rows]:
    """Every table the report has data for, by name; each row a dict of plain values."""
    tables: dict[str, Rows] = {}
    built = [(name, build(report)) for name, build in _BUILDERS.items()]
    built += _probe_tables(report) + [(name, build(report)) for name, build in STUDY_TIDY.items()]
    for name, rows in built:
        if rows:
            tables[name] = [{key: _number(value) for key, value in row.items()} for row in rows]
    for metric in (*METRICS, *RULE_METRICS):
        tables.update(_per_metric(report, metric))
    tables.update(rule_metric_tidy(report))
    return tables


def _number(value: Any) -> Any:
    """The report's JSON spelling of infinity ("inf") back to a float."""
    return math.inf if value == "inf" else value


def _pick(rows: list[dict] | None, drop: tuple[str, ...] = ()) -> Rows:
    return [{k: v for k, v in r.items() if k not in drop} for r in rows or []]


def _with_scope(per_model: list[dict], pooled: dict, drop: tuple[str, ...] = ()) -> Rows:
    """Per-model rows and the pooled row, told apart by ``scope`` (a model may be called "pooled")."""
    return [{"scope": "model", **r} for r in _pick(per_model, drop)] + \
        [{"scope": "pooled", "model": None, **_pick([pooled], drop)[0]}]


# -- one builder per table ----------------------------------------------------------------------

def _pooled_odds_ratio(report: Report) -> Rows:
    cmh = report.cmh
    if not cmh:
        return []
    return [{"models": len(cmh["models"]), "model_list": "; ".join(cmh["models"]),
             **_pick([cmh], ("models", "methods"))[0]}]


def _logistic_terms(report: Report) -> Rows:
    fit = report.logistic
    if not fit:
        return []
    shared = {k: fit.get(k) for k in ("formula", "covariance", "reference_model", "n", "items")}
    return [{**term, **shared} for term in fit["terms"]]


def _agreement_confusion(report: Report) -> Rows:
    agreement = report.agreement
    if not agreement:
        return []
    confusion = agreement["pooled"]["confusion"]
    return [{"human": h, "judge": j, "n": confusion[i][k]} for i, h in enumerate(LABELS)
            for k, j in enumerate(LABELS)]


def _agreement_by_model(report: Report) -> Rows:
    agreement = report.agreement
    return _with_scope(agreement["per_model"], agreement["pooled"], ("confusion",)) if agreement else []


def _rank_correlation(report: Report) -> Rows:
    rho = report.rank_correlation or {}
    return [{"regime": regime, "spearman_rho": value} for regime, value in rho.items()]


def _per_metric(report: Report, metric: str) -> dict[str, Rows]:
    """Metric validity and the surface means by subset, one table per metric."""
    tables = {}
    validity = (report.metric_validity or {}).get(metric)
    if validity:
        tables[f"validity_{metric}"] = _with_scope(validity["per_model"], validity["pooled"])
    surface = (report.surface_by_subset or {}).get(metric)
    if surface:
        tables[f"surface_{metric}_by_subset"] = _pick(surface)
    return tables


def _provenance(key: str, drop: tuple[str, ...] = ()) -> Callable[[Report], Rows]:
    return lambda report: _pick((report.provenance or {}).get(key), drop)


def _provenance_models(report: Report) -> Rows:
    return [{"model": m["model"], "provider": m["provider"], "requested": m["requested"],
             "served": [f"{s['id']} ({s['answers']})" for s in m["served"]], "sampling": m["sampling"],
             "answers": m["answers"], **_pick([m["attempts"]], ("failures",))[0]}
            for m in (report.provenance or {}).get("models") or []]


def _probe_tables(report: Report) -> list[tuple[str, Rows]]:
    """Each registered probe's tables (its spec's ``tidy``), where its part has data."""
    probes = report.probes or {}
    return [(name, _pick(rows)) for kind, spec in PROBES.items() if probes.get(kind)
            for name, rows in resolve(spec.tidy)(probes[kind]).items()]


_BUILDERS: dict[str, Callable[[Report], Rows]] = {
    "accuracy_by_model": lambda r: _pick(r.overall),
    "accuracy_by_title": lambda r: _pick(r.per_title),
    "gap_by_model": lambda r: _pick(r.gap, ("holm_family",)),
    "judge_gap_by_model": lambda r: _pick(r.judge_gap, ("holm_family",)),
    "pooled_odds_ratio": _pooled_odds_ratio,
    "logistic_terms": _logistic_terms,
    "surface_by_title": lambda r: _pick((r.surface_by_subset or {}).get("per_title")),
    "mcnemar_pairs": lambda r: _pick(r.mcnemar, ("holm_family",)),
    "scoring_regimes": lambda r: _pick(r.regimes),
    "rank_correlation": _rank_correlation,
    "judge_accuracy_by_model": lambda r: _pick(r.judge),
    "agreement_confusion": _agreement_confusion,
    "agreement_by_model": _agreement_by_model,
    "inter_annotator_pairs": lambda r: _pick((r.inter_annotator or {}).get("pairwise"), ("confusion",)),
    "abstention_by_model_subset": lambda r: _pick(r.abstention),
    "missing_data_by_model": lambda r: _pick(r.missing),
    "provenance_runs": _provenance("runs"),
    "provenance_imports": _provenance("imports"),
    "provenance_models": _provenance_models,
    "provenance_raters": _provenance("raters"),
    "provenance_scoring": _provenance("scoring"),
    **VALIDATION_TIDY,
}
