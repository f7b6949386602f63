"""The ts-guess part of the report's probes section: how often each model fills the masked word
of a question exactly, per subset, and whether that differs between the documented and the
undocumented subset.

Per model and subset: items probed (an item without an eligible word is counted apart as not
probed, never as a miss), exact matches, the rate with its 95 % Wilson interval. Per model: the
documented and undocumented rates, their difference with Newcombe's hybrid score interval, the
odds ratio and the two-sided Fisher exact p on the 2 x 2 table match / no match, as the main
report does for accuracy (:mod:`harness.report.stats`).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from harness.report.stats import fisher_exact_2x2, newcombe_interval, wilson_interval

__all__ = ["tsguess_part", "METRIC"]

METRIC = "exact_match"


def tsguess_part(frame: pd.DataFrame, contrast: tuple[str, str]) -> dict[str, Any]:
    """``frame``: one row per (model, item) with ``model``, ``item_id``, ``subset`` and ``value``
    (1.0 match, 0.0 miss, NaN not probed)."""
    rates = [_rate(model, subset, rows) for (model, subset), rows
             in frame.groupby(["model", "subset"], sort=False)]
    rates.sort(key=lambda r: (r["model"], _subset_order(r["subset"], contrast)))
    tests = [_test(model, rows, contrast) for model, rows in frame.groupby("model", sort=True)]
    return {"metric": METRIC, "rates": rates, "tests": [t for t in tests if t is not None]}


def _subset_order(subset: str, contrast: tuple[str, str]) -> tuple[int, str]:
    return (contrast.index(subset) if subset in contrast else len(contrast), subset)


def _counts(rows: pd.DataFrame) -> tuple[int, int, int]:
    """(probed, matches, not probed)."""
    probed = rows["value"].dropna()
    return len(probed), int((probed == 1.0).sum()), int(rows["value"].isna().sum())


def _rate(model: str, subset: str, rows: pd.DataFrame) -> dict[str, Any]:
    n, hits, not_probed = _counts(rows)
    low, high = wilson_interval(hits, n)
    return {"model": model, "subset": subset, "n": n, "matches": hits,
            "rate": hits / n if n else math.nan, "ci_low": low, "ci_high": high,
            "not_probed": not_probed}


def _test(model: str, rows: pd.DataFrame, contrast: tuple[str, str]) -> dict[str, Any] | None:
    documented, undocumented = (_counts(rows[rows["subset"] == side]) for side in contrast)
    (n1, k1, _), (n2, k2, _) = documented, undocumented
    if not n1 or not n2:
        return None
    fisher = fisher_exact_2x2(k1, n1 - k1, k2, n2 - k2)
    low, high = newcombe_interval(k1, n1, k2, n2)
    return {"model": model, "documented_n": n1, "documented_rate": k1 / n1,
            "undocumented_n": n2, "undocumented_rate": k2 / n2, "difference": k1 / n1 - k2 / n2,
            "ci_low": low, "ci_high": high, "odds_ratio": fisher.odds_ratio, "fisher_p": fisher.p}
