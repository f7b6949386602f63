"""The chance level of the probe validation's AUCs, and the negative control's alarm.

A base model never saw the planted items, so its scores cannot depend on which items were drawn:
the planted set is one random draw among all the draws ``contam plant`` could have made. The
permutation null makes that draw again :data:`DRAWS` times (seeded, the same number of items from
each subset as the planted set, as ``contam.harness.jobs.plant.choose_planted`` draws) and says where the
observed AUC falls among the re-drawn sets' AUCs: its percentile, and the two-sided permutation p
(the share of re-draws at least as far from 0.5, counting the observed one; Phipson & Smyth 2010).

Each (model, planted set) is one family: every measure the section shows for it. Holm's
correction runs over the family's permutation p-values (and, beside it, over its Mann–Whitney p),
so a base model checked on many measures does not alarm by chance: the alarm is a Holm-adjusted
permutation p below :data:`ALPHA`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.stats import rankdata

from contam.harness.report.statistics.named_tests import holm

__all__ = ["DRAWS", "DRAW_SEED", "ALPHA", "redrawn_sets", "permutation_null", "adjust_families",
           "alarms"]

DRAWS = 2000
DRAW_SEED = 0
ALPHA = 0.05


def redrawn_sets(subsets: Sequence[str], planted: Sequence[bool], draws: int = DRAWS,
                 seed: int = DRAW_SEED) -> np.ndarray:
    """``draws`` x n booleans, each row a planted set drawn again: in each subset, as many items
    as the planted set has there, chosen uniformly (one seeded generator for all rows). Read
    only: a family's measures share one (cached) array."""
    return _redrawn(tuple(subsets), tuple(bool(f) for f in planted), draws, seed)


@lru_cache(maxsize=64)
def _redrawn(subsets: tuple[str, ...], planted: tuple[bool, ...], draws: int,
             seed: int) -> np.ndarray:
    groups, flags = np.asarray(subsets, dtype=object), np.asarray(planted, dtype=bool)
    rng = np.random.default_rng(seed)
    sets = np.zeros((draws, len(flags)), dtype=bool)
    for subset in sorted(set(groups.tolist())):
        members = np.flatnonzero(groups == subset)
        count = int(flags[members].sum())
        order = np.argsort(rng.random((draws, len(members))), axis=1)[:, :count]
        sets[np.arange(draws)[:, None], members[order]] = True
    sets.setflags(write=False)
    return sets


def permutation_null(values: Sequence[float], planted: Sequence[bool], subsets: Sequence[str],
                     draws: int = DRAWS, seed: int = DRAW_SEED) -> dict[str, float]:
    """The observed AUC's percentile among the re-drawn sets' AUCs (ties count half) and the
    two-sided permutation p; NaN for both when either side is empty."""
    flags = np.asarray(planted, dtype=bool)
    positive, total = int(flags.sum()), len(flags)
    if positive == 0 or positive == total:
        return {"perm_percentile": float("nan"), "perm_p": float("nan")}
    ranks = rankdata(np.asarray(values, dtype=float))  # mid-ranks: a tie counts half, as in U

    def auc(rank_sums: np.ndarray) -> np.ndarray:
        return (rank_sums - positive * (positive + 1) / 2) / (positive * (total - positive))

    observed = float(auc(ranks[flags].sum()))
    null = auc(redrawn_sets(subsets, flags, draws, seed) @ ranks)
    distance = abs(observed - 0.5) - 1e-12  # floating sums of the same ranks may differ by an ulp
    extreme = int((np.abs(null - 0.5) >= distance).sum())
    tied = np.abs(null - observed) <= 1e-12
    percentile = float(((null < observed) & ~tied).mean() + 0.5 * tied.mean())
    return {"perm_percentile": percentile, "perm_p": (1 + extreme) / (draws + 1)}


def adjust_families(rows: list[dict[str, Any]]) -> None:
    """Adds ``perm_p_holm``, ``mannwhitney_p_holm`` and ``family_size`` to each row, in place;
    a family is a (model, planted set)'s rows (``family`` key)."""
    families: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        families[(row["model"], row["family"])].append(row)
    for members in families.values():
        for column in ("perm_p", "mannwhitney_p"):
            for row, adjusted in zip(members, holm([r[column] for r in members])):
                row[f"{column}_holm"] = adjusted
        size = sum(not np.isnan(r["perm_p"]) for r in members)
        for row in members:
            row["family_size"] = size


def alarms(rows: list[dict[str, Any]], alpha: float = ALPHA) -> list[dict[str, Any]]:
    """The base-model rows whose Holm-adjusted permutation p is below ``alpha``."""
    return [r for r in rows if r["role"] == "base" and r["perm_p_holm"] < alpha]
