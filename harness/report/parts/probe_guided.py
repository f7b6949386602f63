"""The guided part of the report's probes section: does a model complete an item closer to its
true rest when told which benchmark it comes from (Golchin & Surdeanu 2023)?

Per model, over all its items and per subset, for ROUGE-L and for BLEU-2: the mean score under
the guided and under the general instruction, and the mean of the per-item differences
guided - general with

* a 95 % BCa bootstrap interval, resampling items (the pairs stay together: each item's
  difference is one value), :data:`~contam.harness.report.statistics.named_tests.BOOTSTRAP_RESAMPLES` resamples, seed
  :data:`~contam.harness.report.statistics.named_tests.BOOTSTRAP_SEED` (:func:`~contam.harness.report.statistics.named_tests.bootstrap_mean`);
* a one-sided p of "guided is no better than general" from the paired sign-flip test
  (:mod:`contam.harness.report.statistics.signflip`): exact at up to 20 items, Monte Carlo beyond. A bootstrap p
  has a floor of 1/(resamples + 1) whatever n is (two items, both better, gave 0.0002 where the
  exact test gives 0.25) and is anti-conservative at small n; the sign-flip test is exact there.
  Golchin & Surdeanu judge significance by bootstrap resampling, one-sided (guided better);
  LLMSanitize's version reports the share of resampled means <= 0 without centring, which is
  not a p-value of H0.

An interval from fewer than :data:`SMALL_N` items is flagged (``small_n``): a bootstrap interval
under-covers there (at 8 items each BCa tail holds 5-6% instead of 2.5%).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from contam.harness.report.inputs.cells import subset_rank
from contam.harness.report.model import Report
from contam.harness.report.texts.format import Section, Table, fmt_num, fmt_num_ci, fmt_p, user
from contam.harness.report.statistics.holm import HOLM_CAPTION
from contam.harness.report.inputs.probe_rows import chosen_params, other_params_note, score_frame
from contam.harness.report.statistics.signflip import EXACT_MAX_N, sign_flip_p
from contam.harness.report.statistics.signflip import RESAMPLES as SIGN_FLIPS
from contam.harness.report.statistics.named_tests import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, bootstrap_mean
from contam.harness.store import Store

__all__ = ["KIND", "FIGURE", "build", "section", "tidy", "guided_part", "paired_difference", "MEASURES",
           "MEASURE_NAMES", "BOOTSTRAP", "SMALL_N"]

KIND = "guided"
FIGURE = "fig_probe_guided"
MEASURES = ("rouge_l", "bleu2")
MEASURE_NAMES = {"rouge_l": "ROUGE-L", "bleu2": "BLEU-2"}
SMALL_N = 20  # below this many items an interval is flagged (a bootstrap under-covers)
BOOTSTRAP = {"resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED, "interval": "BCa 95%",
             "test": "one-sided paired sign-flip test, H0: guided - general symmetric about 0",
             "exact_max_n": EXACT_MAX_N, "sign_flips": SIGN_FLIPS, "small_n": SMALL_N}


def paired_difference(guided: np.ndarray, general: np.ndarray) -> dict[str, Any]:
    """Mean scores, mean difference, its BCa interval (``small_n`` under :data:`SMALL_N` items) and
    the one-sided sign-flip p (``p_exact``: by enumeration, else Monte Carlo)."""
    differences = np.asarray(guided, float) - np.asarray(general, float)
    n = len(differences)
    mean = float(differences.mean()) if n else math.nan
    boot = bootstrap_mean(differences)
    test = sign_flip_p(differences)
    return {"n": n, "guided_mean": float(np.mean(guided)) if n else math.nan,
            "general_mean": float(np.mean(general)) if n else math.nan,
            "mean_difference": mean, "ci_low": boot.low, "ci_high": boot.high,
            "small_n": 0 < n < SMALL_N, "p": test.p, "p_exact": test.method == "exact"}


def build(store: Store, contrast: tuple[str, str]) -> dict[str, Any] | None:
    """``report.probes["guided"]``, or None when the store has no guided scores."""
    chosen = chosen_params(store, KIND)
    if chosen is None:
        return None
    return {**chosen, **guided_part(score_frame(store, KIND, chosen["params_sha256"]), contrast)}


def guided_part(frame: pd.DataFrame, contrast: tuple[str, str]) -> dict[str, Any]:
    """``frame``: ``probe_scores`` rows of the guided probe with ``model``, ``item_id``,
    ``subset``, ``metric`` and ``value``; items not probed (NULL) are left out."""
    wide = frame.pivot_table(index=["model", "item_id", "subset"], columns="metric",
                             values="value", aggfunc="first", observed=True).reset_index()
    rows = []
    for model, items in wide.groupby("model", sort=True, observed=True):
        for scope, subset_rows in _scopes(items, contrast):
            rows += [{"model": model, "subset": scope, "measure": measure,
                      **_measure(subset_rows, measure)} for measure in MEASURES]
    return {"differences": rows, "bootstrap": BOOTSTRAP}


def _scopes(items: pd.DataFrame, contrast: tuple[str, str]):
    yield "all", items
    for subset in sorted(set(items["subset"]), key=lambda s: (subset_rank(s, contrast), s)):
        yield subset, items[items["subset"] == subset]


def _measure(items: pd.DataFrame, measure: str) -> dict[str, Any]:
    guided, general = f"{measure}_guided", f"{measure}_general"
    if guided not in items or general not in items:
        return paired_difference(np.array([]), np.array([]))
    pairs = items[[guided, general]].dropna()
    return paired_difference(pairs[guided].to_numpy(), pairs[general].to_numpy())


def tidy(part: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The part's tidy tables (``contam.harness.report.writers.tidy``): one per measure, as its display tables."""
    return {f"probe_guided_{measure}": [{k: v for k, v in row.items() if k != "measure"}
                                        for row in part["differences"] if row["measure"] == measure]
            for measure in MEASURES}


# -- rendering ---------------------------------------------------------------------------------

def section(part: dict[str, Any], report: Report) -> Section:
    tables = [Table(["Model", "Subset", "Items", "Guided", "General", "Guided − general",
                     "95% CI (BCa)", "p (one-sided)", "Holm p"],
                    [[r["model"], str(r["subset"]), str(r["n"]), fmt_num(r["guided_mean"]),
                      fmt_num(r["general_mean"]), fmt_num(r["mean_difference"]),
                      _interval(r), fmt_p(r["p"]), fmt_p(r.get("p_holm"))]
                     for r in part["differences"] if r["measure"] == measure],
                    f"Mean {MEASURE_NAMES[measure]} of the completion against the question's true "
                    f"rest, per model over all items and per subset. † fewer than "
                    f"{part['bootstrap']['small_n']} items: the interval under-covers.{HOLM_CAPTION}",
                    f"probe_guided_{measure}")
              for measure in MEASURES]
    return Section("Probe: guided (guided vs general instruction)", _paragraphs(part), tables,
                   figures=[FIGURE])


def _interval(row: dict[str, Any]) -> str:
    return fmt_num_ci(row["ci_low"], row["ci_high"]) + (" †" if row.get("small_n") else "")


def _paragraphs(part: dict[str, Any]) -> list[str]:
    params, boot = part["params"], part["bootstrap"]
    lines = ["The first half of each question (its first ⌊n/2⌋ words), with the item's title and "
             "answer, is completed twice, greedy: under the guided instruction, which names the "
             f"{user(params.get('split', '?'))} split of the {user(params.get('dataset', '?'))} "
             "dataset and asks for the rest exactly as it appears there, and under the general "
             "instruction, which names nothing (Golchin & Surdeanu 2023, arXiv 2308.08493). Each "
             "completion is scored against the true rest by ROUGE-L (F-measure over tokens) and "
             "BLEU-2. A guided score above the general one says the benchmark itself has leaked.",
             f"The difference guided − general is paired by item: its interval is a 95% BCa "
             f"bootstrap interval resampling items ({boot['resamples']} resamples, seed "
             f"{boot['seed']}), flagged † below {boot['small_n']} items, where a bootstrap interval "
             "covers less than it says. p is a one-sided paired sign-flip (permutation) test of H0: "
             "guided − general is symmetric about 0, on the sum of the differences: exact (every "
             f"one of the 2^n sign patterns) up to {boot['exact_max_n']} items, else "
             f"{boot['sign_flips']} seeded random patterns; a pattern's sum within 10⁻⁹ of the "
             "observed one counts as a tie, at least as extreme. Golchin & Surdeanu judge "
             f"significance by bootstrap resampling. Parameters {user(part['params_sha256'][:12])}."]
    return lines + other_params_note(part, KIND)
