"""P-values from survival functions (never a bound where a value exists),
model labels holding ":", one model, a singular clustered covariance, and the test variants the
report states."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import stats as sps

from contam.harness.report.parts import contamination
from contam.harness.report.texts import pooled as sections
from contam.harness.report.statistics import named_tests as stats
from contam.harness.report.analysis import build_report
from contam.harness.report.texts.format import fmt_p, p_clause
from contam.harness.report.texts.markdown import render_markdown
from tests.test_analysis import make_store
from tests.test_contamination import cells, gap_row


def log10_two_sided_normal(chi2: float) -> float:
    """An independent route to a 1-df chi-square tail: P(χ²₁ ≥ x) = 2·Φ(−√x), in logs (scipy's
    log_ndtr keeps its digits far below a double's range)."""
    return (sps.norm.logsf(math.sqrt(chi2)) + math.log(2)) / math.log(10)


# -- item 1: tails by survival functions --------------------------------------------------------

def test_chi2_tail_is_the_survival_function_not_one_minus_cdf():
    assert 1 - sps.chi2.cdf(825.4, 1) == 0.0  # what statsmodels' test_null_odds computes
    assert stats.chi2_sf(825.4, 1) == pytest.approx(1.6208789e-181, rel=1e-6)
    assert stats.chi2_log10_sf(825.4, 1) == pytest.approx(log10_two_sided_normal(825.4), abs=1e-9)
    # beyond a double: scipy's sf and logsf both give up (0.0, -inf); the log10 still has digits
    assert sps.chi2.sf(2000, 1) == 0.0 and sps.chi2.logsf(2000, 1) == -math.inf
    assert stats.chi2_log10_sf(2000, 1) == pytest.approx(log10_two_sided_normal(2000), abs=1e-9)
    # four df in closed form: P(χ²₄ ≥ x) = e^(−x/2)·(1 + x/2)
    assert stats.chi2_log10_sf(3000, 4) == pytest.approx((-1500 + math.log(1501)) / math.log(10), abs=1e-9)


def test_p_values_print_their_digits_never_a_bound_where_a_value_exists():
    assert fmt_p(stats.chi2_sf(825.4, 1)) == "1.6 × 10⁻¹⁸¹"
    assert p_clause(0.0, stats.chi2_log10_sf(2000, 1)) == "p = 9.1 × 10⁻⁴³⁷"
    assert fmt_p(1e-320, -319.99) == "1.0 × 10⁻³²⁰"  # a subnormal's digits come from its log
    assert fmt_p(0.0) == "< 10⁻³⁰⁰"  # only where nothing but the bound is known (Fisher underflow)
    assert fmt_p(7.5e-72) == "7.5 × 10⁻⁷²" and fmt_p(0.0123) == "0.012"


def test_cmh_p_of_the_paper_data_is_printed_with_its_digits(paper):
    """The paper data's case: CMH χ² = 825.4, p = 1.6 × 10⁻¹⁸¹ (was "p < 10⁻³⁰⁰")."""
    cmh = paper.cmh
    assert cmh["cmh_statistic"] == pytest.approx(825.4, abs=0.05)
    assert cmh["cmh_p"] == pytest.approx(sps.chi2.sf(cmh["cmh_statistic"], 1), rel=1e-12) and cmh["cmh_p"] > 0
    md = render_markdown(paper)
    assert "Cochran–Mantel–Haenszel χ² = 825.4 (1 df, no continuity correction), p = 1.6 × 10⁻¹⁸¹." in md
    assert "10⁻³⁰⁰" not in md
    bd = cmh["breslow_day_p"]
    assert bd == pytest.approx(sps.chi2.sf(cmh["breslow_day_statistic"], 3), rel=1e-12)


def test_cmh_and_breslow_day_beyond_a_double_print_digits():
    """Three models with 1000 items a side each: χ² ≈ 2000, whose tail no double holds."""
    rows = [gap_row(m, 900, 1000, 100, 1000) for m in ("a", "b")] + [gap_row("c", 990, 1000, 10, 1000)]
    cmh = contamination.cmh(rows, [])
    assert cmh["cmh_statistic"] > 1500 and cmh["cmh_p"] == 0.0
    assert cmh["cmh_log10_p"] == pytest.approx(log10_two_sided_normal(cmh["cmh_statistic"]), abs=1e-9)
    reading = sections._cmh_reading(cmh, {"documented": "doc", "undocumented": "und"})
    match = re.search(r"p = (\d\.\d) × 10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)\.", reading)
    exponent = int(match.group(2).translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")))
    assert exponent == math.floor(cmh["cmh_log10_p"]) and exponent < -400 and "<" not in reading


# -- item 2: ":" in a model label ---------------------------------------------------------------

def test_colon_in_model_names_is_no_interaction_term():
    spec = {"gemma4:31b-cloud": (30, 40, 10, 40), "qwen3:8b": (25, 40, 15, 40), "llama3:70b": (28, 40, 9, 40)}
    fit = contamination.logistic(cells(spec), ("doc", "und"), list(spec), [])
    assert fit["interaction"] and fit["reference_model"] == "gemma4:31b-cloud"
    assert [t["term"] for t in fit["terms"]] == [
        "model qwen3:8b", "model llama3:70b", "documented subset (vs undocumented)",
        "documented × model qwen3:8b", "documented × model llama3:70b"]
    assert fit["interaction_wald_df"] == 2  # the main-effect columns of "x:y" labels are not counted
    ratio = ((25 / 15) / (15 / 25)) / ((30 / 10) / (10 / 30))
    assert fit["terms"][3]["odds_ratio"] == pytest.approx(ratio, rel=1e-6)


def test_colon_names_in_the_main_effects_model_and_report(tmp_path):
    items = [(f"d{i}", "Doc", "official") for i in range(12)] + [(f"u{i}", "Hack", "fan") for i in range(12)]
    right = {"gemma4:31b-cloud": lambda i: i.startswith("d"), "qwen3:8b": lambda i: i in ("d0", "d1", "u3")}
    answers = [(i, m, "an answer") for i, _, _ in items for m in right]
    labels = [(i, m, "human", "right" if right[m](i) else "wrong") for i, m, _ in answers]
    with make_store(tmp_path / "s.duckdb", items, answers, labels) as store:
        report = build_report(store)
    fit = report.logistic
    assert fit["interaction"] is False and fit["interaction_wald_df"] is None
    assert not any("×" in t["term"] for t in fit["terms"])
    md = render_markdown(report)
    assert "gemma4 × 31b" not in md and "qwen3 × 8b" not in md and "×" not in md.split("| Term |")[1].split("\n\n")[0]


# -- item 3: one model --------------------------------------------------------------------------

def one_model_report(tmp_path):
    items = [(f"d{i}", "Doc", "official") for i in range(20)] + [(f"u{i}", "Hack", "fan") for i in range(20)]
    right = {"d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "u0", "u1", "u2", "u3"}
    answers = [(i, "gemma4:31b-cloud", "an answer") for i, _, _ in items]
    labels = [(i, m, "human", "right" if i in right else "wrong") for i, m, _ in answers]
    judge = [(i, m, "judge:j", "right" if i in right else "partial") for i, m, _ in answers]
    with make_store(tmp_path / "one.duckdb", items, answers, labels + judge,
                    [(i, m, "bleu2", 0.5) for i, m, _ in answers]) as store:
        return build_report(store)


def test_one_model_says_the_model_tests_need_two(tmp_path):
    report = one_model_report(tmp_path)
    md = render_markdown(report)
    for wrong in ("None interaction", "Pooled over the 1 models", "(1 tests", "1 models", "model(s)",
                  "rater(s)", "interaction terms gives χ² = —", "1 pairs"):
        assert wrong not in md, wrong
    section = md.split("## Contamination across models")[1].split("\n## ")[0]
    assert "**One model** (gemma4:31b-cloud)" in section
    assert "pooling over models needs at least two" in section
    assert "**Does the gap differ between models?** Asking needs at least two models; this report has one." in section
    assert "**Logistic model** right ~ subset on 40 answers" in section
    assert "(one model: whether the gap differs between models needs at least two)" in section
    assert report.logistic["models"] == 1 and report.logistic["interaction_wald_p"] is None
    assert "40 items, 1 model;" in md and "(1 test, human labels)" in md
    assert "Spearman ρ with human" not in md  # a row of dashes said nothing


# -- item 4: identical labels, a singular clustered covariance ----------------------------------

def test_identical_models_get_model_based_errors_not_quasi_separation():
    notes = []
    fit = contamination.logistic(cells({"a": (30, 40, 10, 40), "b": (30, 40, 10, 40)}), ("doc", "und"),
                                 ["a", "b"], notes)
    assert fit is not None and fit["covariance"] == "model-based" and fit["interaction"]
    assert fit["documented_odds_ratio"] == pytest.approx(9.0)
    for term in fit["terms"]:
        assert term["ci_low"] < term["odds_ratio"] < term["ci_high"] and 0 < term["p"] <= 1
    assert fit["interaction_wald_p"] == pytest.approx(1.0)
    [note] = notes
    assert "singular" in note["reason"] and "a and b have the same label on every item" in note["reason"]
    assert "separation" not in note["reason"]
    reading = sections._logistic_reading(fit, None)
    assert "model-based standard errors (the item-clustered covariance is singular, see Notes)" in reading
    assert sections._logistic_table(fit).headers[2] == "95% CI (model-based)"


def test_clustered_errors_stay_where_the_covariance_is_regular():
    fit = contamination.logistic(cells({"a": (30, 40, 10, 40), "b": (25, 40, 15, 40)}), ("doc", "und"),
                                 ["a", "b"], [])
    assert fit["covariance"] == "item-clustered" and fit["cluster_correction"] == "G/(G−1)·(N−1)/(N−K)"


# -- item 5: the test variants, stated ----------------------------------------------------------

def test_report_states_every_test_variant(paper):
    md = render_markdown(paper)
    assert "two-sided exact binomial p on the discordant pairs, not the mid-p" in md
    assert "(1 df, no continuity correction)" in md and "(Robins–Breslow–Greenland variance)" in md
    assert "Breslow–Day test of equal odds ratios with Tarone's correction: χ² = 51.6 (3 df)" in md
    assert "small-sample correction G/(G−1)·(N−1)/(N−K) for G items, N answers and K coefficients" in md
    assert f"({stats.BOOTSTRAP_RESAMPLES} resamples of the items, seed {stats.BOOTSTRAP_SEED})" in md
    assert paper.cmh["methods"]["breslow_day"] == "Breslow–Day with Tarone's correction"


def test_mcnemar_is_the_exact_p_not_the_mid_p(paper):
    row = min((r for r in paper.mcnemar if r["a_only"] != r["b_only"]), key=lambda r: r["a_only"] + r["b_only"])
    b, c = row["a_only"], row["b_only"]
    exact = sps.binomtest(b, b + c, 0.5).pvalue  # 2·P(X ≤ min(b, c))
    mid = exact - sps.binom.pmf(min(b, c), b + c, 0.5)  # 2·P(X < min) + P(X = min)
    assert row["p"] == pytest.approx(exact, rel=1e-12, abs=0) and row["p"] != pytest.approx(mid, rel=1e-3, abs=0)


def test_breslow_day_is_tarone_corrected():
    rows = [gap_row("a", 30, 40, 10, 40), gap_row("b", 20, 40, 15, 40), gap_row("c", 35, 40, 5, 40)]
    cmh = contamination.cmh(rows, [])
    from statsmodels.stats.contingency_tables import StratifiedTable

    table = StratifiedTable([np.array([[r["documented_right"], r["documented_n"] - r["documented_right"]],
                                       [r["undocumented_right"], r["undocumented_n"] - r["undocumented_right"]]],
                                      float) for r in rows])
    tarone, plain = table.test_equal_odds(adjust=True), table.test_equal_odds(adjust=False)
    assert cmh["breslow_day_statistic"] == pytest.approx(tarone.statistic) != pytest.approx(plain.statistic)
    assert cmh["breslow_day_df"] == 2


def test_common_odds_ratio_is_cautioned_when_breslow_day_rejects(paper):
    section = sections.contamination_section(paper)
    logistic = next(p for p in section.paragraphs if p.startswith("**Logistic model**"))
    assert "the common odds ratio documented vs undocumented 58.9" in logistic
    assert "**Caution**: the Breslow–Day test rejects equal odds ratios (p = 3.6 × 10⁻¹¹)" in logistic
    homogeneous = {**paper.cmh, "breslow_day_p": 0.4}
    assert "Caution" not in sections._logistic_reading(paper.logistic, homogeneous)
