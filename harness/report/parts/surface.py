"""The surface-metric analysis: the scoring regimes side by side (Table 5) and their rank
correlation with human accuracy, how well BLEU-2 and BERTScore-F1 track the human labels, and the
metrics' documented/undocumented contrast.

``surface_by_subset`` needs no labels at all: the mean BLEU-2 and BERTScore-F1 of every scored
answer on the documented and the undocumented subset per model, with BCa bootstrap intervals
(resampling items, fixed seed; never outside the scores' range), Welch's
test of the difference and the documented/undocumented ratio (the seed paper's §4.3 evidence that
the contamination signal survives every scoring regime), and the same means per title.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from contam.harness.report.statistics import named_tests as stats
from contam.harness.report.inputs.cells import METRICS, mean, plain, ratio, share, subset_rank
from contam.harness.report.texts.format import plural

__all__ = ["regimes", "rank_correlation", "metric_validity", "surface_by_subset"]


# -- the regimes side by side (Table 5) ---------------------------------------------------------

def regimes(frame: pd.DataFrame, order: list[str], overall: list[dict] | None,
            judge_rows: list[dict] | None) -> list[dict[str, Any]]:
    """Table 5: each regime's per-model aggregate, models in human order (else by name)."""
    human = {r["model"]: r for r in overall or []}
    judged = {r["model"]: r for r in judge_rows or []}
    return [_regime_row(m, human.get(m, {}), judged.get(m, {}), frame[frame["model"] == m]) for m in order]


def _regime_row(model: str, human: dict, judge: dict, cells: pd.DataFrame) -> dict[str, Any]:
    row = {"model": model, "human_accuracy": human.get("accuracy"),
           "human_partial_credit": human.get("partial_credit"),
           "judge_accuracy": judge.get("accuracy"), "judge_partial_credit": judge.get("partial_credit")}
    for metric in METRICS:
        scores = cells[metric].dropna().astype(float).to_numpy()
        low, high = stats.bootstrap_mean_interval(scores) if len(scores) else (None, None)
        row.update({metric: _exact_mean(scores), f"{metric}_n": len(scores),
                    f"{metric}_ci_low": low, f"{metric}_ci_high": high})
    row["mean_words"] = _exact_mean(cells.loc[cells["answered"], "answer_words"].dropna().to_numpy())
    return row


def _exact_mean(values) -> float | None:
    """The correctly rounded mean (math.fsum): the same bytes in the table whatever order the
    rows arrive in, which a parallel SQL avg does not promise."""
    return math.fsum(values) / len(values) if len(values) else None


_RANKED = {"judge": "judge_accuracy", "judge_partial_credit": "judge_partial_credit",
           "bleu2": "bleu2", "bertscore_f1": "bertscore_f1"}


def rank_correlation(regime_rows: list[dict], notes: list) -> dict[str, float | None]:
    """Spearman ρ across models of each regime's aggregate against human strict accuracy."""
    result: dict[str, float | None] = {}
    for key, column in _RANKED.items():
        rows = [r for r in regime_rows if r[column] is not None]
        result[key] = stats.spearman([r["human_accuracy"] for r in rows], [r[column] for r in rows]) \
            if len(rows) >= 3 else None
        if result[key] is None:
            notes.append({"section": f"rank_correlation.{key}",
                          "reason": f"{plural(len(rows), 'model')} with {column} data; ρ needs at least 3"})
    return result


# -- metric validity ----------------------------------------------------------------------------

def metric_validity(frame: pd.DataFrame, contrast, order: list[str], notes: list) -> dict | None:
    labelled = frame[frame["human"].notna()]
    result = {}
    for metric, name in METRICS.items():
        scored = labelled[labelled[metric].notna()]
        if scored.empty:
            notes.append({"section": f"metric_validity.{metric}", "reason": f"no {name} scores in the store"})
            result[metric] = None
            continue
        result[metric] = {
            "pooled": _validity(scored, metric, contrast),
            "per_model": [{"model": m, **_validity(scored[scored["model"] == m], metric, contrast)}
                          for m in order if (scored["model"] == m).any()]}
    return result if any(result.values()) else None


def _validity(cells: pd.DataFrame, metric: str, contrast) -> dict[str, Any]:
    score = cells[metric].astype(float).to_numpy()
    right = (cells["human"] == "right").to_numpy()
    words = cells["answer_words"].astype(float).to_numpy()
    documented, undocumented = (score[(cells["subset"] == side).to_numpy()] for side in contrast or ("", ""))
    return {
        "n": len(score), "n_right": int(right.sum()),
        "mean": mean(score), "mean_right": mean(score[right]), "mean_not_right": mean(score[~right]),
        "roc_auc": stats.roc_auc(score, right), "point_biserial_r": stats.point_biserial(right, score),
        "zero_share_right": share(score[right] == 0), "below_half_share_right": share(score[right] < 0.5),
        "length_r_all": stats.pearson(words, score), "length_r_right": stats.pearson(words[right], score[right]),
        "documented_mean": mean(documented), "undocumented_mean": mean(undocumented),
        "documented_ratio": ratio(mean(documented), mean(undocumented)),
    }


# -- surface metrics by subset (no labels needed) ------------------------------------------------

def surface_by_subset(frame: pd.DataFrame, order: list[str], contrast, notes: list) -> dict | None:
    """§4.3's documented/undocumented score means per model, over every scored answer."""
    result: dict[str, Any] = {}
    for metric, name in METRICS.items():
        scored = frame[frame[metric].notna()]
        result[metric] = [_subset_means(scored[scored["model"] == m], m, metric, contrast)
                          for m in order if (scored["model"] == m).any()] or None
        if result[metric] is None:
            notes.append({"section": f"surface_by_subset.{metric}", "reason": f"no {name} scores in the store"})
    if not any(result.values()):
        return None
    result["per_title"] = _surface_per_title(frame, order, contrast)
    return result


def _subset_means(cells: pd.DataFrame, model: str, metric: str, contrast) -> dict[str, Any]:
    documented = cells.loc[cells["subset"] == contrast[0], metric].astype(float).to_numpy()
    undocumented = cells.loc[cells["subset"] == contrast[1], metric].astype(float).to_numpy()
    row: dict[str, Any] = {"model": model, "metric": metric}
    for side, scores in (("documented", documented), ("undocumented", undocumented)):
        low, high = stats.bootstrap_mean_interval(scores)
        row.update({f"{side}_n": len(scores), f"{side}_mean": mean(scores),
                    f"{side}_ci_low": low, f"{side}_ci_high": high})
    return {**row, **_welch(documented, undocumented),
            "ratio": _positive_ratio(row["documented_mean"], row["undocumented_mean"])}


def _welch(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Difference of means with Welch's 95% interval and two-sided p (undefined below n = 2 a side,
    or when both sides are constant)."""
    difference = mean(a) - mean(b) if len(a) and len(b) else math.nan
    if len(a) < 2 or len(b) < 2 or (np.ptp(a) == 0 and np.ptp(b) == 0):
        return {"difference": difference, "difference_ci_low": math.nan,
                "difference_ci_high": math.nan, "welch_p": math.nan}
    with warnings.catch_warnings():  # near-constant samples: scipy warns, the result stands
        warnings.simplefilter("ignore", RuntimeWarning)
        test = sps.ttest_ind(a, b, equal_var=False)
        ci = test.confidence_interval(0.95)
    return {"difference": difference, "difference_ci_low": float(ci.low),
            "difference_ci_high": float(ci.high), "welch_p": float(test.pvalue)}


def _positive_ratio(documented: float, undocumented: float) -> float:
    """A ratio of means is only meaningful when both are positive (rescaled BERTScore can be < 0)."""
    return documented / undocumented if documented > 0 and undocumented > 0 else math.nan


def _surface_per_title(frame: pd.DataFrame, order: list[str], contrast) -> list[dict[str, Any]]:
    answered = frame[frame["answered"]]
    grouped = answered.groupby(["model", "title", "subset"], sort=False, observed=True).agg(
        first_seq=("item_seq", "min"), n=("item_seq", "size"),
        bleu2_n=("bleu2", "count"), bleu2=("bleu2", "mean"),
        bertscore_f1_n=("bertscore_f1", "count"), bertscore_f1=("bertscore_f1", "mean"),
        mean_words=("answer_words", "mean")).reset_index()
    rows = sorted(grouped.to_dict("records"),
                  key=lambda r: (order.index(r["model"]), subset_rank(r["subset"], contrast), r["first_seq"]))
    return [{k: plain(v) for k, v in r.items() if k != "first_seq"} for r in rows]
