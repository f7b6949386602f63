"""The min-k probe's part of the report (``report.probes["min-k"]``): per model, score and k, the
Min-K% / Min-K%++ scores of the documented and the undocumented subset, and how well each score
tells them apart.

The score is taken as a classifier of "documented" (higher = more likely seen in training, the
papers' direction): its ROC-AUC is the Mann-Whitney U of the documented scores over the
undocumented ones divided by n1 * n0 (ties count one half; :func:`contam.harness.report.statistics.named_tests.roc_auc`),
with a two-sided Mann-Whitney p from the same test (:func:`contam.harness.report.statistics.named_tests.roc_auc_test`).
The 95% interval is a percentile bootstrap that resamples the documented and the undocumented
items independently (:func:`contam.harness.report.statistics.named_tests.bootstrap` with this part's own settings,
:data:`RESAMPLES` resamples, seed :data:`SEED`, not the report's BCa ones; the section and the
provenance say so), so a rebuilt report has the same interval. A text with no
score (fewer tokens than 1/k, stored NULL) is left out and counted. Each (model, k, source) is
read from one parameter set, the one with the most scored items (the latest on a tie); the part
names the sets it leaves out (``other_params``).

:func:`build` reads the store, :func:`section` renders the part, :func:`tidy` gives its CSV rows
(all named by min-k's spec in ``contam.metrics.probe_registry``); the figure is
:mod:`contam.harness.report.plots.probe_mink`'s.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import orjson
from scipy import stats as sps

from contam.harness.report.model import Report
from contam.harness.report.texts.format import Section, Table, contrast_names, fmt_num, fmt_num_ci, fmt_p, user
from contam.harness.report.statistics.holm import HOLM_CAPTION
from contam.harness.report.inputs.probe_rows import other_params_note
from contam.harness.report.statistics.named_tests import bootstrap, roc_auc_test
from contam.harness.store import Store

__all__ = ["KIND", "FIGURE", "build", "section", "tidy", "auc_interval", "RESAMPLES", "SEED"]

RESAMPLES = 2000
SEED = 0
CONFIDENCE = 0.95
KIND = "min-k"
FIGURE = "fig_probe_min_k"
NAMES = {"min_k": "Min-K%", "min_k_pp": "Min-K%++"}

# Each model's parameter sets, the one with the most scored items first (the latest on a tie).
_SETS_SQL = """
SELECT s.model, s.params_sha256, any_value(p.params) AS params
FROM latest_probe_scores s JOIN probe_params p USING (params_sha256)
WHERE s.probe = 'min-k' GROUP BY ALL
ORDER BY s.model, count(DISTINCT s.item_id) DESC, max(s.seq) DESC, s.params_sha256
"""

_SCORES_SQL = """
SELECT s.model, s.params_sha256, s.metric, s.value, i.subset
FROM latest_probe_scores s JOIN latest_items i USING (item_id)
WHERE s.probe = 'min-k' AND i.subset IN (?, ?)
ORDER BY s.model, s.metric, s.item_id
"""


def build(store: Store, contrast: tuple[str, str] = ("official", "fan")) -> dict[str, Any] | None:
    """The part, or None when the store holds no min-k scores of the two subsets."""
    documented, undocumented = contrast
    chosen, others = _chosen_sets(store)
    groups: defaultdict[tuple, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for row in store.query_dicts(_SCORES_SQL, [documented, undocumented]):
        params = chosen.get((row["model"], row["params_sha256"]))
        if params is not None:
            key = (row["model"], row["metric"], params["k"], params["logprobs"], row["params_sha256"])
            groups[key][row["subset"]].append(row["value"])
    if not groups:
        return None
    rows = [_row(key, values.get(documented, []), values.get(undocumented, []))
            for key, values in sorted(groups.items())]
    return {"resamples": RESAMPLES, "seed": SEED, "confidence": CONFIDENCE, "rows": rows,
            "other_params": others}


def _chosen_sets(store: Store) -> tuple[dict[tuple[str, str], dict], list[str]]:
    """Per model, k and log-probability source, the parameter set with the most scored items
    (the latest on a tie; another text rule at the same k is another set): (model,
    params_sha256) -> its params, and the sets with scores left out."""
    chosen: dict[tuple[str, str], dict] = {}
    taken: set[tuple] = set()
    others: list[str] = []
    for row in store.query_dicts(_SETS_SQL):
        params = orjson.loads(row["params"])
        key = (row["model"], params["k"], params["logprobs"])
        if key not in taken:
            taken.add(key)
            chosen[(row["model"], row["params_sha256"])] = params
        elif row["params_sha256"] not in others:
            others.append(row["params_sha256"])
    return chosen, others


def _row(key: tuple, documented: list, undocumented: list) -> dict[str, Any]:
    model, metric, k, source, sha = key
    doc = [v for v in documented if v is not None]
    undoc = [v for v in undocumented if v is not None]
    auc, p = roc_auc_test(doc + undoc, [True] * len(doc) + [False] * len(undoc))
    low, high = auc_interval(doc, undoc)
    return {"model": model, "metric": metric, "k": k, "logprobs": source, "params_sha256": sha,
            "documented_n": len(doc), "undocumented_n": len(undoc),
            "unscored": len(documented) + len(undocumented) - len(doc) - len(undoc),
            "documented_median": _median(doc), "undocumented_median": _median(undoc),
            "auc": auc, "auc_ci_low": low, "auc_ci_high": high, "mannwhitney_p": p,
            "documented_values": doc, "undocumented_values": undoc}


def _median(values: list[float]) -> float:
    return float(np.median(values)) if values else float("nan")


def _auc_statistic(doc: np.ndarray, undoc: np.ndarray, axis: int = -1) -> np.ndarray:
    """ROC-AUC along ``axis`` (vectorised over resamples): U / (n1 * n0)."""
    u = sps.mannwhitneyu(doc, undoc, axis=axis, method="asymptotic").statistic
    return u / (doc.shape[axis] * undoc.shape[axis])


def auc_interval(doc: list[float], undoc: list[float]) -> tuple[float, float]:
    """The percentile bootstrap interval of the AUC (see the module docstring); NaN with fewer
    than two scores in either subset."""
    if len(doc) < 2 or len(undoc) < 2:
        return float("nan"), float("nan")
    result = bootstrap((doc, undoc), _auc_statistic, method="percentile", resamples=RESAMPLES,
                       seed=SEED, confidence=CONFIDENCE)
    return result.low, result.high


def tidy(part: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The part's tidy table (``contam.harness.report.writers.tidy``), without each row's scores themselves."""
    raw = ("documented_values", "undocumented_values")
    return {"probe_min_k": [{k: v for k, v in row.items() if k not in raw} for row in part["rows"]]}


# -- rendering ------------------------------------------------------------------------------------

def section(part: dict[str, Any], report: Report) -> Section:
    contrast = contrast_names(report)
    paragraphs = [
        f"**Min-K% and Min-K%++** (Shi et al. 2023; Zhang et al. 2024): the mean log-probability "
        "(Min-K%++: standardised against the model's next-token distribution) of the k% least "
        "likely tokens of each item's title, question and reference; higher means more likely "
        "seen in training. Scored as a classifier of the documented subset "
        f"({user(contrast['documented'])} vs {user(contrast['undocumented'])}): ROC-AUC 0.5 is "
        f"chance. Intervals: {part['confidence']:.0%} percentile bootstrap, {part['resamples']} "
        f"resamples of each subset, seed {part['seed']}; p: two-sided Mann–Whitney."]
    if any(r["logprobs"] == "prompt_logprobs" for r in part["rows"]):
        paragraphs.append("Models served by vLLM have Min-K% only: a server returns each token's "
                          "log-probability but not the whole next-token distribution Min-K%++ needs.")
    paragraphs += other_params_note(part, KIND)
    rows = [[r["model"], NAMES.get(r["metric"], r["metric"]), f"{r['k']:g}",
             f"{r['documented_n']} / {r['undocumented_n']}", fmt_num(r["documented_median"]),
             fmt_num(r["undocumented_median"]), fmt_num(r["auc"]),
             fmt_num_ci(r["auc_ci_low"], r["auc_ci_high"]), fmt_p(r["mannwhitney_p"]),
             fmt_p(r.get("p_holm"))] for r in part["rows"]]
    table = Table(["Model", "Score", "k", "n (doc / undoc)", "Median doc", "Median undoc",
                   "ROC-AUC", f"{part['confidence']:.0%} CI", "p", "Holm p"], rows,
                  f"Min-K% / Min-K%++ per model: documented vs undocumented items.{HOLM_CAPTION}",
                  "probe_min_k")
    return Section("Probe: min-k (token log-probabilities)", paragraphs, [table], [FIGURE])
