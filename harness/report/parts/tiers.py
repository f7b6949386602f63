"""The tiers section's numbers (``[study] subsets`` lists the subsets as ordered tiers of expected
exposure): per model, each tier's accuracy with its Wilson interval, and the Cochran–Armitage test
for a linear trend in accuracy across the tiers in the order listed (scores 0, 1, 2, ...).

Cochran–Armitage (Cochran 1954, Biometrics 10:417; Armitage 1955, Biometrics 11:375; Agresti,
Categorical Data Analysis §5.3.5): with n_i cells and x_i right in tier i, score s_i, N = Σ n_i
and p̄ = Σ x_i / N,  T = Σ s_i (x_i − n_i p̄),  Var T = p̄ (1 − p̄) [Σ n_i s_i² − (Σ n_i s_i)² / N],
Z = T / √Var T, two-sided p from the normal. Z > 0: accuracy rises along the listed order.
"Correct" is :mod:`contam.harness.report.inputs.correct`'s rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd
from scipy import stats as sps

from contam.harness.errors import UserError
from contam.harness.report.statistics import named_tests as stats
from contam.harness.report.inputs.correct import correct_cells, source_counts
from contam.metrics.outcome import Outcome

__all__ = ["tiers", "cochran_armitage", "require_tiers"]

NAN = float("nan")


def tiers(frame: pd.DataFrame, subsets: Sequence[str], order: list[str],
          outcome: Outcome | None = None) -> dict[str, Any]:
    """Per model: the tiers' accuracy rows and the trend test."""
    known = frame[frame["subset"].isin(subsets)]
    data = correct_cells(known, outcome)
    models = [m for m in order if m in set(data["model"])]
    rows = [_tier_row(m, tier, data[(data["model"] == m) & (data["subset"] == tier)])
            for m in models for tier in subsets]
    trends = [_trend_row(m, [r for r in rows if r["model"] == m]) for m in models]
    return {"subsets": list(subsets), "correct": source_counts(data, known, outcome), "per_tier": rows,
            "trend": trends}


def require_tiers(present: Sequence[str], subsets: Sequence[str]) -> None:
    """Every listed tier must have items; a misspelt one would silently drop out of the trend. (One
    tier is no error: the tiers section is left out, and "Not in this report" says a trend needs two.)"""
    for name in subsets:
        if name not in present:
            raise UserError(f"[study] subsets: {name!r} has no items "
                            f"(subsets in the store: {', '.join(map(str, present)) or 'none'})")


def _tier_row(model: str, tier: str, cells: pd.DataFrame) -> dict[str, Any]:
    n, right = len(cells), int(cells["correct"].sum())
    low, high = stats.wilson_interval(right, n)
    return {"model": model, "subset": tier, "n": n, "right": right,
            "accuracy": stats.proportion(right, n), "ci_low": low, "ci_high": high}


def _trend_row(model: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    z, p = cochran_armitage([r["right"] for r in rows], [r["n"] for r in rows])
    return {"model": model, "tiers": len(rows), "n": sum(r["n"] for r in rows), "z": z,
            "chi2": z * z, "p": p}


def cochran_armitage(right: Sequence[int], n: Sequence[int],
                     scores: Sequence[float] | None = None) -> tuple[float, float]:
    """(Z, two-sided p) of the trend test (module docstring); NaN where undefined (no cells,
    every answer the same, or one tier only)."""
    scores = list(range(len(n))) if scores is None else list(scores)
    total = sum(n)
    if total == 0:
        return NAN, NAN
    p_bar = sum(right) / total
    t = sum(s * (x - k * p_bar) for s, x, k in zip(scores, right, n))
    spread = sum(k * s * s for s, k in zip(scores, n)) - sum(k * s for s, k in zip(scores, n)) ** 2 / total
    variance = p_bar * (1 - p_bar) * spread
    if variance <= 0:
        return NAN, NAN
    z = t / math.sqrt(variance)
    return z, float(2 * sps.norm.sf(abs(z)))
