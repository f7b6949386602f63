"""The report's "Probe validation" section (``report.validation``): when the store records
plantings (``contam plant``), how well each probe tells the planted items from the others, on
each planted model and on its base model, the negative control that never saw them.

Per (planting, model, measure) it gives the planted and not-planted items' mean, the ROC-AUC of
the measure as a classifier of "planted" (higher = planted; the Mann-Whitney U over n1 * n0, as
min-k's part, with its percentile-bootstrap interval, :func:`contam.harness.report.parts.probe_mink.auc_interval`),
the two-sided Mann-Whitney p, and the TPR at 5% FPR (the highest true-positive rate of any
threshold whose false-positive rate is at most 5%). Measures: Min-K% and Min-K%++, cdd's
peakedness and flagged share, ts-guess's exact match, guided's ROUGE-L difference, and the
density study's own accuracy (the judge's or a human's "right", contains, exact, BLEU-2) from the
cells. A model's score of an item is its latest row of that metric under any parameters.

Which configured model is which comes from the runs' recorded configs: a model whose ``model`` is
``planted:NAME`` is that planting's model; one named as the planting's base (or configured with
the base's model) is its base. :func:`section` renders it; the figures are
:mod:`contam.harness.report.plots.validation`'s (ARCHITECTURE.md, The report).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import Any

import numpy as np

from contam.harness.report.model import Report
from contam.harness.report.texts.format import Section, Table, fmt_num, fmt_num_ci, fmt_p, fmt_pct, user
from contam.harness.report.parts.probe_mink import CONFIDENCE, RESAMPLES, SEED, auc_interval
from contam.harness.report.statistics.named_tests import roc_auc_test
from contam.harness.report.statistics.permutation_null import (
    ALPHA, DRAW_SEED, DRAWS, adjust_families, alarms, permutation_null,
)
from contam.harness.store import Store
from contam.harness.store.plantings import configured_models, plantings
from contam.metrics.metric_registry import rule_metrics
from contam.metrics.outcome import Outcome
from contam.metrics.probe_registry import PROBES, ProbeMeasure, resolve

__all__ = ["build", "section", "model_scores", "item_subsets", "planted_set_id", "caption", "roc_points", "tpr_at_fpr", "TIDY", "MEASURES", "READINGS",
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

_SUBSETS_SQL = "SELECT item_id, subset FROM latest_items"

# The density study's cells: "right" under labels is the human's label where there is one, else
# the judge's; under a metric, its call (contam.metrics.outcome).
_LABELLED = "coalesce(human_label, judge_label)"


def _cells_sql(outcome: Outcome) -> str:
    call = _LABELLED if outcome.labels else outcome.call_sql(outcome.metric)
    names = [m.metric for m in _DENSITY]
    values = [f"CASE WHEN {call} IS NULL THEN NULL WHEN {call} = 'right' THEN 1.0 ELSE 0.0 END",
              *names[1:]]  # the metrics' own columns of `cells`
    return (f"SELECT model, item_id, 'density' AS source, unnest({names!r}) AS metric, "
            f"unnest([{', '.join(values)}]) AS value FROM cells "
            "WHERE list_contains($models, model) AND answer IS NOT NULL")


def build(store: Store, outcome: Outcome | None = None,
          probes: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The section's data, or None when the store records no planting (no note: a study without
    plantings is the usual case, and its report stays as it was); ``outcome``: what the density
    rows count as right (labels by default); ``probes``: the report's probes section, whose
    parts say which models a probe cannot work on (none: asked of the store)."""
    planted = sorted(plantings(store), key=lambda p: (p["base_name"], p["format"], p["epochs"]))
    if not planted:
        return None
    roles = _roles(planted, configured_models(store))
    models = sorted({model for _, model, _ in roles})
    scores, subsets = model_scores(store, models, outcome), item_subsets(store)
    unfit = _not_applicable(store, probes or {})
    rows = [row for group, model, role in roles
            for row in _rows(group, model, role, scores.get(model, {}), subsets,
                             {source: why for (source, m), why in unfit.items() if m == model})]
    adjust_families(rows)
    return {"plantings": [_summary(p) for p in planted], "rows": rows, "max_fpr": MAX_FPR,
            "resamples": RESAMPLES, "seed": SEED, "confidence": CONFIDENCE, "draws": DRAWS,
            "draw_seed": DRAW_SEED, "alpha": ALPHA}


def _roles(planted: list[dict], models: list[tuple[str, str, str]]) -> list[tuple[list[dict], str, str]]:
    """(the plantings a row set stands for, configured model name, "planted" or "base") for
    every model that ran: a planted model once per its planting, a base model once per distinct
    planted set (its scores do not depend on how the items were planted, only on which)."""
    roles: list[tuple[list[dict], str, str]] = []
    bases: dict[tuple[str, tuple[str, ...]], list[dict]] = {}
    for planting in planted:
        for name, provider, model in models:
            if provider == "local" and model == planting["name"]:
                roles.append(([planting], name, "planted"))
            elif name == planting["base_name"] or (provider == "local"
                                                  and model == planting["base_model"]):
                key = (name, tuple(sorted(planting["planted_items"])))
                if key not in bases:
                    bases[key] = []
                    roles.append((bases[key], name, "base"))
                bases[key].append(planting)
    return roles


def _not_applicable(store: Store, probes: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(probe, model) -> why the probe cannot work on that model (its spec's hook, given the
    probe's part of the report where it was built)."""
    return {(spec.name, model): why for spec in PROBES.values() if spec.not_applicable
            for model, why in resolve(spec.not_applicable)(store, probes.get(spec.name)).items()}


def model_scores(store: Store, models: list[str],
                 outcome: Outcome | None = None) -> dict[str, dict[tuple, dict[str, float]]]:
    """model -> (source, metric) -> item -> value, for the measures the section knows."""
    found: dict[str, dict[tuple, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for sql in (_PROBE_SQL, _cells_sql(outcome or Outcome())):
        for row in store.query_dicts(sql, {"models": models}):
            measure = (row["source"], row["metric"])
            if measure in MEASURES and row["value"] is not None:
                found[row["model"]][measure][row["item_id"]] = float(row["value"])
    return found


def item_subsets(store: Store) -> dict[str, str]:
    """item -> subset: the strata a planted set is drawn again in (as ``contam plant`` drew it)."""
    return {item: str(subset) for item, subset in store.query(_SUBSETS_SQL)}


def planted_set_id(items: list[str]) -> str:
    """A short name of a planted set, the same for every planting of the same items."""
    return hashlib.sha256("\n".join(sorted(items)).encode()).hexdigest()[:12]


def _rows(group: list[dict], model: str, role: str, scores: dict[tuple, dict[str, float]],
          subsets: dict[str, str], unfit: dict[str, str]) -> list[dict[str, Any]]:
    chosen = set(group[0]["planted_items"])
    about = {"planting": ", ".join(p["name"] for p in group),
             "format": ", ".join(dict.fromkeys(p["format"] for p in group)),
             "epochs": group[0]["epochs"] if role == "planted" else 0,
             "family": planted_set_id(group[0]["planted_items"]), "model": model, "role": role}
    rows = []
    for measure, label in MEASURES.items():
        values = scores.get(measure)
        if not values:
            continue
        ordered = sorted(values.items())  # item order, not the query's: the bootstrap repeats
        separation = _separation(ordered, chosen, subsets, READINGS[measure].direction)
        rows.append({**about, "source": measure[0], "metric": measure[1], "measure": label,
                     "direction": READINGS[measure].direction,
                     **(_not_scored(separation) if measure[0] in unfit else separation),
                     "not_applicable": unfit.get(measure[0])})
    return rows


def _not_scored(separation: dict[str, Any]) -> dict[str, Any]:
    """A measure its probe cannot produce on this model: the counts stay, every statistic is
    undefined (so it is outside its family's Holm), and the ROC curve is not drawn."""
    kept = ("planted_n", "unplanted_n")
    return {key: value if key in kept else ([] if key.startswith("roc_") else
                                            None if key == "holds_half" else float("nan"))
            for key, value in separation.items()}


def _separation(ordered: list[tuple[str, float]], chosen: set[str], subsets: dict[str, str],
                direction: str) -> dict[str, Any]:
    """The planted and not-planted means, then, with the scores turned so that higher reads as
    planted (``direction``), the AUC with its interval and p, its permutation null, the TPR at 5%
    FPR, and the ROC curve's points (for the figure)."""
    sign = -1.0 if direction == "lower" else 1.0
    flags = [item in chosen for item, _ in ordered]
    positive = [sign * v for (_, v), planted in zip(ordered, flags) if planted]
    negative = [sign * v for (_, v), planted in zip(ordered, flags) if not planted]
    auc, p = roc_auc_test(positive + negative, [True] * len(positive) + [False] * len(negative))
    low, high = auc_interval(positive, negative)
    fpr, tpr = roc_points(positive, negative)
    null = permutation_null([sign * v for _, v in ordered], flags,
                            [subsets.get(item, "") for item, _ in ordered])
    return {"planted_n": len(positive), "unplanted_n": len(negative),
            "planted_mean": sign * _mean(positive), "unplanted_mean": sign * _mean(negative),
            "auc": auc, "auc_ci_low": low, "auc_ci_high": high, "mannwhitney_p": p, **null,
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

def section(report: Report) -> Section | None:
    """The section, or None when the report has no plantings."""
    part = report.validation
    if not part:
        return None
    paragraphs = [_method_line(part), *_control_lines(part), *_unfit_lines(part["rows"]),
                  *_planting_lines(part["plantings"])]
    rows = [[r["model"], r["role"], r["planting"], r["measure"],
             f"{r['planted_n']} / {r['unplanted_n']}", *_statistics(r)] for r in part["rows"]]
    table = Table(["Model", "Role", "Planting", "Measure", "n (planted / not)", "Mean planted",
                   "Mean not", "ROC-AUC", f"{part['confidence']:.0%} CI", "p (Mann–Whitney)",
                   "Null percentile", "p (permutation)", "Holm p", "TPR @ 5% FPR"],
                  rows, "Probe validation: planted vs not-planted items, on each planted model "
                  "and its base model (once per planted set). Null percentile: where the AUC falls "
                  "among the AUCs of re-drawn planted sets; Holm p: the permutation p adjusted "
                  "within the row's family (its model and planted set).", "probe_validation")
    figures = [ROC_FIGURE] + ([DOSE_FIGURE] if _several_doses(part) else [])
    return Section("Probe validation (planted contamination)", paragraphs, [table],
                   figures if part["rows"] else [])


def _statistics(r: dict) -> list[str]:
    if r.get("not_applicable"):
        return ["not applicable", *["—"] * 9]
    return [fmt_num(r["planted_mean"]), fmt_num(r["unplanted_mean"]), fmt_num(r["auc"]),
            fmt_num_ci(r["auc_ci_low"], r["auc_ci_high"]), fmt_p(r["mannwhitney_p"]),
            fmt_pct(r["perm_percentile"]), fmt_p(r["perm_p"]), fmt_p(r["perm_p_holm"]),
            fmt_num(r["tpr_at_5_fpr"])]


def _unfit_lines(rows: list[dict]) -> list[str]:
    """Each (model, measure) a probe cannot produce: said, so that 0% is not read as clean."""
    seen = dict.fromkeys((r["model"], r["measure"], r["not_applicable"]) for r in rows
                         if r.get("not_applicable"))
    return [f"{measure} on {user(model)}: {why}." for model, measure, why in seen]


def _method_line(part: dict) -> str:
    return ("Each planted model was fine-tuned (`contam plant`) on a known share of the items; a "
            "probe that detects contamination scores the planted items above the others on it, and "
            "not on its base model, which never saw them (the negative control, whose ROC-AUC should "
            "be 0.5). ROC-AUC: planted vs not-planted items, each measure read in its declared "
            f"direction (higher = planted unless it says lower); {part['confidence']:.0%} percentile "
            f"bootstrap, {part['resamples']} resamples, seed {part['seed']}; p: two-sided "
            f"Mann–Whitney; TPR at {part['max_fpr']:.0%} FPR. Permutation null: the planted set "
            f"drawn again {part['draws']:,} times (seed {part['draw_seed']}), as many items from "
            "each subset as it has; the permutation p is the share of re-draws whose AUC is at "
            "least as far from 0.5. Holm's correction runs over each family: one model's measures "
            "on one planted set. Means: the measure's mean (a share for flagged, exact match and "
            "accuracy) on planted / not-planted items.")


def _control_lines(part: dict) -> list[str]:
    """The negative control, worded for what it shows: a base-model measure whose AUC on this
    planted set is rarer than chance allows, after Holm over the base model's measures."""
    families = {(r["model"], r["planting"]): r["family_size"]
                for r in part["rows"] if r["role"] == "base"}
    stated = "; ".join(f"{user(model)} on the items of {user(planting)}: {size} measure(s)"
                       for (model, planting), size in families.items())
    failed = alarms(part["rows"], part["alpha"])
    if not failed:
        return [f"Negative control: on no base model does any measure separate the planted items "
                f"beyond chance (Holm-adjusted permutation p ≥ {part['alpha']:g} in every family; "
                f"{stated or 'no base model ran'})."]
    return [f"Negative control: on base model {user(r['model'])}, which never saw any item, "
            f"{r['measure']}'s AUC {fmt_num(r['auc'])} lies at the {fmt_pct(r['perm_percentile'])}"
            f" percentile of re-drawn planted sets (permutation p {fmt_p(r['perm_p'])}, Holm p "
            f"{fmt_p(r['perm_p_holm'])} over its {r['family_size']} measures; items of "
            f"{user(r['planting'])}). The planted items differ from the others on this measure "
            "before any planting, so the planted models' separation on it is partly the draw's, "
            "not the planting's: compare it with this AUC, not with 0.5." for r in failed]


def _planting_lines(planted: list[dict]) -> list[str]:
    return [f"{user(p['name'])}: {p['base_name']} ({user(p['base_model'])}) fine-tuned on "
            f"{p['planted_n']} items ({p['format']}), {p['epochs']} epoch(s), lr "
            f"{p['learning_rate']:g}, batch {p['batch_size']}, max length {p['max_length']}, seed "
            f"{p['seed']}, {p['device']}; loss per epoch "
            f"{', '.join(f'{x:.3f}' for x in p['loss_per_epoch'])}; weights sha256 "
            f"{p['weights_sha256'][:12]}…; training {p['wall_s']:.0f} s." for p in planted]


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


def _tidy(report: Report) -> list[dict[str, Any]]:
    rows = (report.validation or {}).get("rows") or []
    return [{k: v for k, v in row.items() if k not in ("roc_fpr", "roc_tpr")} for row in rows]


TIDY = {"probe_validation": _tidy}
