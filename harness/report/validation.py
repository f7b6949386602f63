"""The report's "Probe validation" section (``report["validation"]``): when the store records
plantings (``contam plant``), how well each probe tells the planted items from the others, on
each planted model and on its base model, the negative control that never saw them.

Per (planting, model, measure) it gives the planted and not-planted items' mean, the ROC-AUC of
the measure as a classifier of "planted" (higher = planted; the Mann-Whitney U over n1 * n0, as
min-k's part, with its percentile-bootstrap interval, :func:`harness.report.probe_mink.auc_interval`),
the two-sided Mann-Whitney p, and the TPR at 5% FPR (the highest true-positive rate of any
threshold whose false-positive rate is at most 5%). Measures: Min-K% and Min-K%++, cdd's
peakedness and flagged share, ts-guess's exact match, guided's ROUGE-L difference, and the
density study's own accuracy (the judge's or a human's "right", contains, exact, BLEU-2) from the
cells. A model's score of an item is its latest row of that metric under any parameters.

Which configured model is which comes from the runs' recorded configs: a model whose ``model`` is
``planted:NAME`` is that planting's model; one named as the planting's base (or configured with
the base's model) is its base. :func:`section` renders it; the figures are
:mod:`harness.report.validation_figure`'s (ARCHITECTURE.md, The report).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from harness.report.format import Section, Table, fmt_num, fmt_num_ci, fmt_p, user
from harness.report.probe_mink import CONFIDENCE, RESAMPLES, SEED, auc_interval
from harness.report.stats import roc_auc_test
from harness.store import Store
from harness.store.plantings import configured_models, plantings
from metrics.metric_registry import rule_metrics
from metrics.outcome import Outcome
from metrics.probe_registry import PROBES, ProbeMeasure

__all__ = ["build", "section", "caption", "roc_points", "tpr_at_fpr", "TIDY", "MEASURES", "READINGS",
           "ROC_FIGURE", "DOSE_FIGURE", "MAX_FPR"]

MAX_FPR = 0.05
ROC_FIGURE, DOSE_FIGURE = "fig_validation_roc", "fig_validation_dose"
# The density study's own accuracy, read from the cells: not a probe, so not in the probe
# registry. "right" is the study's outcome; then each rule metric of the metric registry, BLEU-2.
_DENSITY = (ProbeMeasure("right", "density: correct", "share"),
            *(ProbeMeasure(m, f"density: {m}", "share") for m in rule_metrics()),
            ProbeMeasure("bleu2", "density: BLEU-2"))
# (source, metric) -> how it is read: each probe's own measures (the registry), then the density's.
READINGS: dict[tuple[str, str], ProbeMeasure] = {
    **{(spec.name, m.metric): m for spec in PROBES.values() for m in spec.measures},
    **{("density", m.metric): m for m in _DENSITY}}
# (source, metric) -> its name in the report; in this order.
MEASURES = {key: measure.label for key, measure in READINGS.items()}

# arg_max_null, not arg_max: a latest row stored as NULL (nothing to score) is no score, where
# arg_max would skip it and return an older row's value.
_PROBE_SQL = """
SELECT model, item_id, probe AS source, metric, arg_max_null(value, seq) AS value
FROM latest_probe_scores WHERE list_contains($models, model) GROUP BY ALL
"""

# The density study's cells: "right" under labels is the human's label where there is one, else
# the judge's; under a metric, its call (metrics.outcome).
_LABELLED = "coalesce(human_label, judge_label)"


def _cells_sql(outcome: Outcome) -> str:
    call = _LABELLED if outcome.labels else outcome.call_sql(outcome.metric)
    names = [m.metric for m in _DENSITY]
    values = [f"CASE WHEN {call} IS NULL THEN NULL WHEN {call} = 'right' THEN 1.0 ELSE 0.0 END",
              *names[1:]]  # the metrics' own columns of `cells`
    return (f"SELECT model, item_id, 'density' AS source, unnest({names!r}) AS metric, "
            f"unnest([{', '.join(values)}]) AS value FROM cells "
            "WHERE list_contains($models, model) AND answer IS NOT NULL")


def build(store: Store, outcome: Outcome | None = None) -> dict[str, Any] | None:
    """The section's data, or None when the store records no planting (no note: a study without
    plantings is the usual case, and its report stays as it was); ``outcome``: what the density
    rows count as right (labels by default)."""
    planted = sorted(plantings(store), key=lambda p: (p["base_name"], p["format"], p["epochs"]))
    if not planted:
        return None
    roles = _roles(planted, configured_models(store))
    models = sorted({model for _, model, _ in roles})
    scores = _scores(store, models, outcome or Outcome())
    rows = [row for planting, model, role in roles
            for row in _rows(planting, model, role, scores.get(model, {}))]
    return {"plantings": [_summary(p) for p in planted], "rows": rows, "max_fpr": MAX_FPR,
            "resamples": RESAMPLES, "seed": SEED, "confidence": CONFIDENCE}


def _roles(planted: list[dict], models: list[tuple[str, str, str]]) -> list[tuple[dict, str, str]]:
    """(planting, configured model name, "planted" or "base") for every model that ran."""
    roles = []
    for planting in planted:
        for name, provider, model in models:
            if provider == "local" and model == planting["name"]:
                roles.append((planting, name, "planted"))
            elif name == planting["base_name"] or (provider == "local"
                                                  and model == planting["base_model"]):
                roles.append((planting, name, "base"))
    return roles


def _scores(store: Store, models: list[str],
            outcome: Outcome) -> dict[str, dict[tuple, dict[str, float]]]:
    """model -> (source, metric) -> item -> value, for the measures the section knows."""
    found: dict[str, dict[tuple, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for sql in (_PROBE_SQL, _cells_sql(outcome)):
        for row in store.query_dicts(sql, {"models": models}):
            measure = (row["source"], row["metric"])
            if measure in MEASURES and row["value"] is not None:
                found[row["model"]][measure][row["item_id"]] = float(row["value"])
    return found


def _rows(planting: dict, model: str, role: str,
          scores: dict[tuple, dict[str, float]]) -> list[dict[str, Any]]:
    chosen = set(planting["planted_items"])
    rows = []
    for measure, label in MEASURES.items():
        values = scores.get(measure)
        if not values:
            continue
        ordered = sorted(values.items())  # item order, not the query's: the bootstrap repeats
        positive = [v for item, v in ordered if item in chosen]
        negative = [v for item, v in ordered if item not in chosen]
        rows.append({"planting": planting["name"], "format": planting["format"],
                     "epochs": planting["epochs"], "model": model, "role": role,
                     "source": measure[0], "metric": measure[1], "measure": label,
                     **_separation(positive, negative)})
    return rows


def _separation(positive: list[float], negative: list[float]) -> dict[str, Any]:
    """The planted and not-planted means, the AUC with its interval and p, the TPR at 5% FPR,
    and the ROC curve's points (for the figure)."""
    auc, p = roc_auc_test(positive + negative, [True] * len(positive) + [False] * len(negative))
    low, high = auc_interval(positive, negative)
    fpr, tpr = roc_points(positive, negative)
    return {"planted_n": len(positive), "unplanted_n": len(negative),
            "planted_mean": _mean(positive), "unplanted_mean": _mean(negative),
            "auc": auc, "auc_ci_low": low, "auc_ci_high": high, "mannwhitney_p": p,
            "tpr_at_5_fpr": tpr_at_fpr(fpr, tpr, MAX_FPR),
            "holds_half": bool(low <= 0.5 <= high) if np.isfinite([low, high]).all() else None,
            "roc_fpr": fpr, "roc_tpr": tpr}


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else float("nan")


def roc_points(positive: list[float], negative: list[float]) -> tuple[list[float], list[float]]:
    """The ROC curve: (FPR, TPR) at each distinct score taken as the threshold (score >= t is
    called planted), from (0, 0) to (1, 1)."""
    if not positive or not negative:
        return [], []
    pos, neg = np.asarray(positive), np.asarray(negative)
    thresholds = np.unique(np.concatenate([pos, neg]))[::-1]
    fpr = [0.0] + [float((neg >= t).mean()) for t in thresholds]
    tpr = [0.0] + [float((pos >= t).mean()) for t in thresholds]
    return fpr, tpr


def tpr_at_fpr(fpr: list[float], tpr: list[float], max_fpr: float) -> float:
    """The highest TPR among the curve's points with FPR <= ``max_fpr``; NaN without a curve."""
    allowed = [t for f, t in zip(fpr, tpr) if f <= max_fpr + 1e-12]
    return max(allowed) if allowed else float("nan")


def _summary(planting: dict) -> dict[str, Any]:
    keep = ("name", "base_name", "base_model", "format", "share", "epochs", "learning_rate",
            "batch_size", "max_length", "seed", "device", "loss_per_epoch", "weights_sha256",
            "versions", "wall_s")
    return {**{key: planting[key] for key in keep}, "planted_n": len(planting["planted_items"])}


# -- rendering ------------------------------------------------------------------------------------

def section(report: dict) -> Section | None:
    """The section, or None when the report has no plantings."""
    part = report.get("validation")
    if not part:
        return None
    paragraphs = [
        "Each planted model was fine-tuned (`contam plant`) on a known share of the items; a probe "
        "that detects contamination scores the planted items above the others on it, and not on "
        "its base model, which never saw them (the negative control, whose ROC-AUC should be "
        f"0.5). ROC-AUC: planted vs not-planted items; {part['confidence']:.0%} percentile "
        f"bootstrap, {part['resamples']} resamples, seed {part['seed']}; p: two-sided "
        f"Mann–Whitney; TPR at {part['max_fpr']:.0%} FPR. Means: the measure's mean (a share "
        "for flagged, exact match and accuracy) on planted / not-planted items.",
        *_control_lines(part["rows"]), *_planting_lines(part["plantings"])]
    rows = [[r["model"], r["role"], r["planting"], r["measure"],
             f"{r['planted_n']} / {r['unplanted_n']}", fmt_num(r["planted_mean"]),
             fmt_num(r["unplanted_mean"]), fmt_num(r["auc"]),
             fmt_num_ci(r["auc_ci_low"], r["auc_ci_high"]), fmt_p(r["mannwhitney_p"]),
             fmt_num(r["tpr_at_5_fpr"])] for r in part["rows"]]
    table = Table(["Model", "Role", "Planting", "Measure", "n (planted / not)", "Mean planted",
                   "Mean not", "ROC-AUC", f"{part['confidence']:.0%} CI", "p", "TPR @ 5% FPR"],
                  rows, "Probe validation: planted vs not-planted items, on each planted model "
                  "and its base model.", "probe_validation")
    figures = [ROC_FIGURE] + ([DOSE_FIGURE] if _several_doses(part) else [])
    return Section("Probe validation (planted contamination)", paragraphs, [table],
                   figures if part["rows"] else [])


def _control_lines(rows: list[dict]) -> list[str]:
    """The negative control, said plainly: each base-model AUC whose interval leaves out 0.5."""
    failed = [r for r in rows if r["role"] == "base" and r["holds_half"] is False]
    if not failed:
        return ["Negative control: on every base model, every measure's AUC interval holds 0.5."]
    return [f"Negative control failed: on base model {user(r['model'])}, {r['measure']}'s AUC "
            f"interval {fmt_num_ci(r['auc_ci_low'], r['auc_ci_high'])} does not hold 0.5 "
            f"(items of {user(r['planting'])}): this measure separates these items without any "
            "planting, so its separation on the planted model overstates what it detects."
            for r in failed]


def _planting_lines(planted: list[dict]) -> list[str]:
    return [f"{user(p['name'])}: {p['base_name']} ({user(p['base_model'])}) fine-tuned on "
            f"{p['planted_n']} items ({p['format']}), {p['epochs']} epoch(s), lr "
            f"{p['learning_rate']:g}, batch {p['batch_size']}, max length {p['max_length']}, seed "
            f"{p['seed']}, {p['device']}; loss per epoch "
            f"{', '.join(f'{x:.3f}' for x in p['loss_per_epoch'])}; weights sha256 "
            f"{p['weights_sha256'][:12]}…; {p['wall_s']:.0f} s." for p in planted]


def _several_doses(part: dict) -> bool:
    doses = defaultdict(set)
    for p in part["plantings"]:
        doses[p["format"]].add(p["epochs"])
    return any(len(epochs) > 1 for epochs in doses.values())


def caption(name: str) -> str | None:
    return {ROC_FIGURE: "Probe validation: ROC curves of planted vs not-planted items, per "
                        "measure; solid lines the planted models, dashed the base model (the "
                        "negative control); the diagonal is chance.",
            DOSE_FIGURE: "Probe validation: ROC-AUC (with its 95% interval) of planted vs "
                         "not-planted items against the epochs of fine-tuning, per format; "
                         "epoch 0 is the base model."}.get(name)


def _tidy(report: dict) -> list[dict[str, Any]]:
    rows = (report.get("validation") or {}).get("rows") or []
    return [{k: v for k, v in row.items() if k not in ("roc_fpr", "roc_tpr")} for row in rows]


TIDY = {"probe_validation": _tidy}
