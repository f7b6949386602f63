"""CMH, Breslow–Day and the item-clustered logistic model, checked against hand formulas, and
their degenerate cases (one model, zero cells, separation) answered with notes, never exceptions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from scipy.optimize import brentq

from contam.harness.report.parts import contamination


def gap_row(model, dk, dn, uk, un):
    return {"model": model, "documented_right": dk, "documented_n": dn, "undocumented_right": uk,
            "undocumented_n": un}


def tables_of(rows):
    return [np.array([[r["documented_right"], r["documented_n"] - r["documented_right"]],
                      [r["undocumented_right"], r["undocumented_n"] - r["undocumented_right"]]], float)
            for r in rows]


def mantel_haenszel(tables):
    return sum(t[0, 0] * t[1, 1] / t.sum() for t in tables) / sum(t[0, 1] * t[1, 0] / t.sum() for t in tables)


def breslow_day(tables, odds):
    """Breslow & Day (1980) §4.4 by hand: the expected top-left cell under the common odds ratio,
    less Tarone's (1985) correction (Σ observed − Σ expected)² / Σ variance."""
    chi2, observed, expected, variance = 0.0, 0.0, 0.0, 0.0
    for t in tables:
        rows, col = t.sum(axis=1), t[:, 0].sum()
        low, high = max(0.0, col - rows[1]), min(rows[0], col)
        fitted = brentq(lambda a: a * (rows[1] - col + a) - odds * (rows[0] - a) * (col - a), low, high)
        cells = [fitted, rows[0] - fitted, col - fitted, rows[1] - col + fitted]
        v = 1 / sum(1 / c for c in cells)
        chi2 += (t[0, 0] - fitted) ** 2 / v
        observed, expected, variance = observed + t[0, 0], expected + fitted, variance + v
    tarone = chi2 - (observed - expected) ** 2 / variance
    return tarone, sps.chi2.sf(tarone, len(tables) - 1)


def test_cmh_and_breslow_day_on_the_paper_data(paper):
    tables = tables_of(paper.gap)
    cmh = paper.cmh
    assert cmh["odds_ratio"] == pytest.approx(mantel_haenszel(tables))
    assert cmh["ci_low"] < cmh["odds_ratio"] < cmh["ci_high"]
    chi2, p = breslow_day(tables, cmh["odds_ratio"])
    assert cmh["breslow_day_statistic"] == pytest.approx(chi2, rel=1e-6)
    assert cmh["breslow_day_p"] == pytest.approx(p, rel=1e-5) and p < 0.05  # the gaps differ
    assert cmh["cmh_p"] < 1e-100


def test_equal_tables_are_homogeneous():
    rows = [gap_row(m, 30, 40, 10, 40) for m in ("a", "b", "c")]
    notes = []
    cmh = contamination.cmh(rows, notes)
    assert cmh["odds_ratio"] == pytest.approx((30 * 30) / (10 * 10))
    assert cmh["breslow_day_statistic"] == pytest.approx(0, abs=1e-9) and cmh["breslow_day_p"] == pytest.approx(1)
    assert notes == []


def test_one_model_has_no_breslow_day_and_says_so():
    notes = []
    cmh = contamination.cmh([gap_row("a", 30, 40, 10, 40)], notes)
    assert cmh["odds_ratio"] == pytest.approx(9.0) and cmh["breslow_day_p"] is None
    assert "one model only" in notes[0]["reason"]


def test_empty_sides_drop_out_and_zero_cells_are_notes():
    notes = []
    cmh = contamination.cmh([gap_row("a", 20, 40, 5, 20), gap_row("b", 0, 0, 3, 10)], notes)
    assert cmh["models"] == ["a"]  # b has no documented items: no stratum
    assert cmh["odds_ratio"] == pytest.approx((20 * 15) / (20 * 5))
    notes = []
    assert contamination.cmh([gap_row("a", 0, 0, 3, 10)], notes) is None and notes[0]["section"] == "cmh"
    notes = []
    assert contamination.cmh([gap_row("a", 20, 20, 5, 20)], notes) is None and "infinite" in notes[0]["reason"]
    notes = []
    assert contamination.cmh([gap_row("a", 10, 10, 10, 10)], notes) is None and "0/0" in notes[0]["reason"]


def cells(spec):
    """spec: {model: (doc_right, doc_n, undoc_right, undoc_n)} -> the analysis frame, the items
    (keyed by seq, as in the report's cells frame) shared by the models."""
    rows = []
    for model, (dk, dn, uk, un) in spec.items():
        rows += [{"item_seq": i, "model": model, "subset": "doc",
                  "human": "right" if i < dk else "wrong"} for i in range(dn)]
        rows += [{"item_seq": 10_000 + i, "model": model, "subset": "und",
                  "human": "right" if i < uk else "wrong"} for i in range(un)]
    return pd.DataFrame(rows)


def test_logistic_interaction_model_is_saturated():
    """With subset × model the reference model's documented coefficient is its own 2×2 log odds ratio."""
    spec = {"a": (30, 40, 10, 40), "b": (25, 40, 15, 40)}
    notes = []
    fit = contamination.logistic(cells(spec), ("doc", "und"), ["a", "b"], notes)
    assert fit["interaction"] and fit["reference_model"] == "a" and notes == []
    assert fit["documented_odds_ratio"] == pytest.approx((30 / 10) / (10 / 30))
    interaction = next(t for t in fit["terms"] if "×" in t["term"])
    assert interaction["odds_ratio"] == pytest.approx(((25 / 15) / (15 / 25)) / 9.0, rel=1e-6)
    assert fit["interaction_wald_df"] == 1 and 0 < fit["interaction_wald_p"] < 1
    assert fit["n"] == 160 and fit["items"] == 80


def test_logistic_separation_falls_back_to_main_effects(paper):
    fit = paper.logistic
    assert fit["interaction"] is False and fit["formula"] == "right ~ subset + model"
    assert fit["documented_ci_low"] < fit["documented_odds_ratio"] < fit["documented_ci_high"]
    assert any(n.section == "logistic" and "perfect separation" in n.reason for n in paper.notes)


@pytest.mark.parametrize("spec", [
    {"a": (40, 40, 0, 40)},                       # one model, separated both ways
    {"a": (40, 40, 0, 40), "b": (40, 40, 0, 40)},  # complete separation by subset
    {"a": (0, 40, 0, 40), "b": (0, 40, 0, 40)},    # nothing right at all
    {"a": (1, 1, 0, 1)},                           # two items
])
def test_logistic_degenerate_data_is_a_note(spec):
    notes = []
    fit = contamination.logistic(cells(spec), ("doc", "und"), list(spec), notes)
    assert fit is None and notes and notes[-1]["section"] == "logistic"


def test_logistic_one_model_without_separation():
    notes = []
    fit = contamination.logistic(cells({"a": (30, 40, 10, 40)}), ("doc", "und"), ["a"], notes)
    assert fit["documented_odds_ratio"] == pytest.approx(9.0) and fit["interaction_wald_p"] is None
