"""The one-sided sign-flip (paired permutation) test of guided − general differences: under H0 the
differences are symmetric about 0, so each one's sign is a fair coin (Fisher 1935; Good,
Permutation Tests, §3.1). The statistic is the sum of the differences; p is the share of sign
patterns whose sum is at least the observed one.

Exact where the 2^n patterns can be enumerated (n ≤ :data:`EXACT_MAX_N`): p = #{T* ≥ T} / 2^n,
so two differences, both positive, give 1/4, never the bootstrap's floor. Beyond, Monte Carlo:
:data:`RESAMPLES` seeded random patterns, p = (1 + #{T* ≥ T}) / (1 + resamples). A sum within
:data:`TOLERANCE` × Σ|d| of the observed one counts as equal to it (at least as extreme), so that
scores on a coarse grid, whose pattern sums tie the observed sum exactly, are not decided by
floating-point rounding. See ARCHITECTURE.md, The report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["SignFlip", "sign_flip_p", "EXACT_MAX_N", "RESAMPLES", "SEED", "TOLERANCE"]

EXACT_MAX_N = 20  # 2^20 sums: about 8 MB and a fraction of a second
RESAMPLES = 9999
SEED = 20240613  # the report's bootstrap seed: a rebuilt report has the same p
TOLERANCE = 1e-9


@dataclass(frozen=True)
class SignFlip:
    p: float
    method: str  # "exact" or "monte carlo"; "" where p is undefined


def sign_flip_p(differences: np.ndarray) -> SignFlip:
    """One-sided p of H0 "guided is no better than general"; NaN with fewer than one difference."""
    d = np.asarray(differences, dtype=float)
    if len(d) == 0:
        return SignFlip(math.nan, "")
    observed, slack = float(d.sum()), TOLERANCE * max(float(np.abs(d).sum()), 1e-300)
    if len(d) <= EXACT_MAX_N:
        sums = _every_pattern_sum(d)
        return SignFlip(float(np.mean(sums >= observed - slack)), "exact")
    signs = np.random.default_rng(SEED).choice((-1.0, 1.0), size=(RESAMPLES, len(d)))
    hits = int(np.sum(signs @ d >= observed - slack))
    return SignFlip((1 + hits) / (1 + RESAMPLES), "monte carlo")


def _every_pattern_sum(d: np.ndarray) -> np.ndarray:
    """Σ ε_i d_i for all 2^n sign patterns ε, built one difference at a time."""
    sums = np.zeros(1)
    for value in d:
        sums = np.concatenate((sums + value, sums - value))
    return sums
