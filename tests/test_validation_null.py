"""The negative control's chance level: re-drawn planted sets keep the stratification, the
permutation p and percentile agree with a full enumeration, Holm runs per (model, planted set),
and a base model that never saw the items alarms on at most 5% of seeded re-splits
(scripts/negative_control.py), where the uncorrected rule alarmed on far more."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

from contam.harness.report.statistics.permutation_null import adjust_families, alarms, permutation_null, redrawn_sets

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import negative_control  # noqa: E402  (a script, not a package)

SUBSETS = ["a"] * 6 + ["b"] * 4
PLANTED = [True, True, True, False, False, False, True, True, False, False]


def test_a_redrawn_set_keeps_each_subsets_count_and_is_seeded():
    sets = redrawn_sets(SUBSETS, PLANTED, draws=500, seed=4)
    assert sets.shape == (500, 10)
    assert (sets[:, :6].sum(axis=1) == 3).all() and (sets[:, 6:].sum(axis=1) == 2).all()
    assert len({row.tobytes() for row in sets}) > 50  # many different draws, not one repeated
    assert (sets == redrawn_sets(SUBSETS, PLANTED, draws=500, seed=4)).all()
    assert not (sets == redrawn_sets(SUBSETS, PLANTED, draws=500, seed=5)).all()


def _enumerated(values, planted, subsets):
    """The exact permutation distribution: every set with the planted counts per subset."""
    a = [n for n, s in enumerate(subsets) if s == "a"]
    b = [n for n, s in enumerate(subsets) if s == "b"]
    aucs = []
    for chosen in itertools.product(itertools.combinations(a, 3), itertools.combinations(b, 2)):
        flags = np.zeros(len(values), dtype=bool)
        flags[list(chosen[0] + chosen[1])] = True
        pos, neg = values[flags], values[~flags]
        aucs.append(((pos[:, None] > neg).sum() + 0.5 * (pos[:, None] == neg).sum()) / (5 * 5))
    return np.array(aucs)


def test_the_permutation_p_and_percentile_match_the_full_enumeration():
    values = np.array([3.0, 2.5, 2.0, 1.0, 0.5, 0.0, 2.2, 1.0, 0.2, 0.1])  # a tie across the sets
    found = permutation_null(values, PLANTED, SUBSETS, draws=20000, seed=1)
    null = _enumerated(values, np.array(PLANTED), SUBSETS)
    pos, neg = values[np.array(PLANTED)], values[~np.array(PLANTED)]
    observed = ((pos[:, None] > neg).sum() + 0.5 * (pos[:, None] == neg).sum()) / 25
    exact_p = (np.abs(null - 0.5) >= abs(observed - 0.5) - 1e-12).mean()
    exact_percentile = (null < observed - 1e-12).mean() + 0.5 * (abs(null - observed) <= 1e-12).mean()
    assert found["perm_p"] == pytest.approx(exact_p, abs=0.01)
    assert found["perm_percentile"] == pytest.approx(exact_percentile, abs=0.01)


def test_holm_runs_within_each_model_and_planted_set():
    rows = [{"model": m, "family": f, "role": "base", "perm_p": p, "mannwhitney_p": p}
            for m, f, p in [("m", "x", 0.01), ("m", "x", 0.04), ("m", "y", 0.01), ("n", "x", 0.02)]]
    adjust_families(rows)
    assert [r["perm_p_holm"] for r in rows] == pytest.approx([0.02, 0.04, 0.01, 0.02])
    assert [r["family_size"] for r in rows] == [2, 2, 1, 1]
    assert alarms(rows) == rows
    assert alarms(rows, alpha=0.015) == [rows[2]]


def test_a_base_model_alarms_on_at_most_five_percent_of_200_seeded_re_splits():
    subsets, scores = negative_control.synthetic_scores()
    rates = negative_control.false_alarm_rates(subsets, scores, 200)
    assert rates["after: Holm-adjusted permutation p < 0.05"] <= 0.05
    assert rates["before: uncorrected Mann–Whitney p < 0.05"] >= 0.2  # what the issue measured


def test_the_negative_controls_planted_sets_are_the_ones_contam_plant_draws():
    from contam.harness.jobs.plant import choose_planted
    from contam.metrics.probes import ProbeItem

    ids = [f"item-{n}" for n in range(len(SUBSETS))]
    items = [ProbeItem(item_id=i, title="", subset=s, question="", reference="")
             for i, s in zip(ids, SUBSETS)]
    for seed in range(5):
        planted = {item.item_id for item in choose_planted(items, 0.5, seed)}
        drawn = negative_control.half_of_each_subset(SUBSETS, seed, ids)
        assert [i for i, chosen in zip(ids, drawn) if chosen] == sorted(planted, key=ids.index)
