"""Each statistic recomputed independently (by hand, or from first principles) on small tables."""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import product

import numpy as np
import pytest
from scipy import stats as sps

from contam.harness.report.statistics import named_tests as stats

# Table 6 of the seed paper: rows human, columns judge (right, partial, wrong).
TABLE_6 = [[655, 112, 64], [2, 12, 18], [3, 23, 711]]


def textbook_wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


@pytest.mark.parametrize("k,n", [(258, 400), (214, 400), (145, 400), (0, 20), (20, 20), (1, 3), (97, 100)])
def test_wilson_equals_the_textbook_formula(k, n):
    assert stats.wilson_interval(k, n) == pytest.approx(textbook_wilson(k, n), abs=1e-12)


def test_wilson_known_values_from_the_paper():
    # Table 2: 258/400 -> [59.7, 69.0]; Table 3: 100/100 -> [96.3, 100.0], 8/100 -> [4.1, 15.0]
    assert [round(x, 3) for x in stats.wilson_interval(258, 400)] == [0.597, 0.690]
    assert [round(100 * x, 1) for x in stats.wilson_interval(100, 100)] == [96.3, 100.0]
    assert [round(100 * x, 1) for x in stats.wilson_interval(8, 100)] == [4.1, 15.0]
    assert all(math.isnan(x) for x in stats.wilson_interval(0, 0))


def test_partial_credit_and_proportion():
    assert stats.partial_credit(258, 9, 400) == pytest.approx(0.65625)
    assert stats.proportion(3, 4) == 0.75 and math.isnan(stats.proportion(0, 0))


def exact_fisher_two_sided(a: int, b: int, c: int, d: int) -> float:
    """Sum of the hypergeometric probabilities no larger than the observed one, in exact fractions."""
    row1, col1, n = a + b, a + c, a + b + c + d

    def prob(x: int) -> Fraction:
        return Fraction(math.comb(col1, x) * math.comb(n - col1, row1 - x), math.comb(n, row1))

    observed = prob(a)
    support = range(max(0, row1 + col1 - n), min(row1, col1) + 1)
    # scipy compares with a relative tolerance of 1e-7; exact ties are what matter here
    return float(sum(p for x in support if (p := prob(x)) <= observed * Fraction(1 + 10**-7)))


@pytest.mark.parametrize("table", [
    (3, 1, 1, 3),          # the lady tasting tea: p = 0.4857, OR 9
    (190, 10, 24, 176),    # Claude Opus 5, Table 4
    (186, 14, 28, 172),    # Gemini 3.5 Flash-Lite
    (121, 79, 24, 176),    # Gemma 4 31B
    (200, 0, 58, 142),     # GPT-5.6-sol: OR infinite
    (5, 0, 0, 5),
])
def test_fisher_matches_exact_hypergeometric_sum(table):
    result = stats.fisher_exact_2x2(*table)
    assert result.p == pytest.approx(exact_fisher_two_sided(*table), rel=1e-9)
    a, b, c, d = table
    assert result.odds_ratio == (math.inf if b * c == 0 else a * d / (b * c))


def test_fisher_paper_values():
    assert stats.fisher_exact_2x2(3, 1, 1, 3).p == pytest.approx(0.4857142857)
    claude = stats.fisher_exact_2x2(190, 10, 24, 176)
    assert round(claude.odds_ratio, 1) == 139.3 and f"{claude.p:.1e}" == "7.5e-72"
    assert math.isnan(stats.fisher_exact_2x2(0, 5, 0, 5).odds_ratio)  # 0/0


@pytest.mark.parametrize("k1,n1,k2,n2,expected", [
    # Newcombe (1998) Stat Med 17:873, Table II, method 10
    (56, 70, 48, 80, (0.0524, 0.3339)),
    (9, 10, 3, 10, (0.1705, 0.8090)),
    (6, 7, 2, 7, (0.0582, 0.8062)),
    (5, 56, 0, 29, (-0.0381, 0.1926)),
    (0, 10, 0, 20, (-0.1611, 0.2775)),
    (10, 10, 0, 20, (0.6791, 1.0000)),
])
def test_newcombe_hybrid_score_worked_examples(k1, n1, k2, n2, expected):
    assert [round(x, 4) for x in stats.newcombe_interval(k1, n1, k2, n2)] == list(expected)


def test_cohen_kappa_by_hand():
    # p_o = 35/50 = 0.7; p_e = (25·30 + 25·20)/50² = 0.5; κ = 0.2/0.5 = 0.4
    assert stats.cohen_kappa([[20, 5], [10, 15]]) == pytest.approx(0.4)
    # 3×3: p_o = 0.65, p_e = (0.4·0.45 + 0.3·0.25 + 0.3·0.3) = 0.345; κ = 0.305/0.655
    confusion = [[30, 5, 5], [10, 15, 5], [5, 5, 20]]
    assert stats.cohen_kappa(confusion) == pytest.approx(0.305 / 0.655)
    # linear agreement weights 1, 1/2, 0: p_o(w) = (65 + 0.5·(5+10+5+5))/100 = 0.775
    # p_e(w) = Σ w_ij r_i c_j = 0.345 + 0.5·(.4·.25 + .3·.45 + .3·.3 + .3·.25) = 0.545
    assert stats.cohen_kappa(confusion, "linear") == pytest.approx((0.775 - 0.545) / (1 - 0.545))


def agreement_weighted_kappa(confusion, weight) -> float:
    """The other textbook form: (p_o,w − p_e,w)/(1 − p_e,w) with agreement weights."""
    m = np.asarray(confusion, float) / np.sum(confusion)
    k = len(m)
    w = np.array([[weight(i, j, k) for j in range(k)] for i in range(k)])
    po, pe = (w * m).sum(), (w * np.outer(m.sum(1), m.sum(0))).sum()
    return (po - pe) / (1 - pe)


def test_kappas_on_table_6_are_the_papers():
    assert round(stats.cohen_kappa(TABLE_6), 3) == 0.750
    assert round(stats.cohen_kappa(TABLE_6, "linear"), 3) == 0.820
    assert round(stats.cohen_kappa(stats.collapse_to_binary(TABLE_6)), 3) == 0.775
    assert round(stats.exact_agreement(TABLE_6), 3) == 0.861
    assert stats.cohen_kappa(TABLE_6) == pytest.approx(
        agreement_weighted_kappa(TABLE_6, lambda i, j, k: float(i == j)))
    assert stats.cohen_kappa(TABLE_6, "linear") == pytest.approx(
        agreement_weighted_kappa(TABLE_6, lambda i, j, k: 1 - abs(i - j) / (k - 1)))


def test_collapse_and_degenerate_kappa():
    assert stats.collapse_to_binary(TABLE_6) == [[655, 176], [5, 764]]
    assert math.isnan(stats.cohen_kappa([[5, 0], [0, 0]]))  # one category only
    assert math.isnan(stats.cohen_kappa([[0, 0], [0, 0]]))


def test_mcnemar_exact():
    # b = 1, c = 9: p = 2·P(X ≤ 1), X ~ Bin(10, ½) = 2·11/1024
    assert stats.mcnemar_exact(1, 9) == pytest.approx(22 / 1024)
    assert stats.mcnemar_exact(9, 1) == pytest.approx(22 / 1024)
    assert stats.mcnemar_exact(30, 30) == 1.0 and stats.mcnemar_exact(0, 0) == 1.0
    assert stats.mcnemar_exact(0, 10) == pytest.approx(2 / 1024)


def test_spearman_with_ties_gives_the_papers_rho():
    human = [0.645, 0.535, 0.535, 0.3625]  # Claude and Gemini tie: average ranks 2.5
    judge = [0.5325, 0.4925, 0.37, 0.255]
    bertscore = [0.557, 0.330, 0.455, 0.440]
    # ranks (4, 2.5, 2.5, 1) vs (4, 3, 2, 1): Σd·d' = 4.5, Σd² = 4.5, Σd'² = 5 -> 3/√10
    assert stats.spearman(human, judge) == pytest.approx(3 / math.sqrt(10))
    assert round(stats.spearman(human, judge), 3) == 0.949
    assert stats.spearman(human, bertscore) == pytest.approx(2 / math.sqrt(10))  # 0.632
    assert math.isnan(stats.spearman([1, 1, 1], [1, 2, 3]))


def brute_force_auc(scores, positive) -> float:
    pos = [s for s, p in zip(scores, positive) if p]
    neg = [s for s, p in zip(scores, positive) if not p]
    wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in product(pos, neg))
    return wins / (len(pos) * len(neg))


def test_roc_auc_counts_ties_as_half():
    rng = np.random.default_rng(7)
    scores = rng.integers(0, 5, 200) / 4  # many ties, like BLEU's zeros
    positive = rng.random(200) < 0.4
    assert stats.roc_auc(scores, positive) == pytest.approx(brute_force_auc(scores, positive))
    assert stats.roc_auc([0.1, 0.2, 0.3, 0.3], [False, False, True, True]) == 1.0
    assert stats.roc_auc([0, 0, 0, 0], [False, True, False, True]) == 0.5
    assert math.isnan(stats.roc_auc([1, 2], [True, True]))


def test_roc_auc_test_gives_the_auc_and_the_mann_whitney_p_of_one_test():
    scores, positive = [0.3, 0.9, 0.4, 0.8, 0.1, 0.5, 0.7], [False, True, False, True, False, True, False]
    auc, p = stats.roc_auc_test(scores, positive)
    assert auc == stats.roc_auc(scores, positive) == 11 / 12
    assert p == sps.mannwhitneyu([0.9, 0.8, 0.5], [0.3, 0.4, 0.1, 0.7], alternative="two-sided").pvalue
    assert all(math.isnan(x) for x in stats.roc_auc_test([1, 2], [True, True]))


def test_bootstrap_is_scipys_seeded_and_hands_back_its_resamples():
    doc, undoc = [0.1, 0.5, 0.9, 1.3, 0.2], [0.0, 0.4, 0.3, -0.2]
    result = stats.bootstrap((doc, undoc), lambda a, b, axis: a.mean(axis) - b.mean(axis),
                             method="percentile", resamples=500, seed=4)
    scipy = sps.bootstrap((np.array(doc), np.array(undoc)), lambda a, b, axis: a.mean(axis) - b.mean(axis),
                          n_resamples=500, method="percentile", rng=np.random.default_rng(4))
    assert (result.low, result.high) == (scipy.confidence_interval.low, scipy.confidence_interval.high)
    assert np.array_equal(result.distribution, scipy.bootstrap_distribution)
    means = stats.bootstrap_mean(doc)
    assert (means.low, means.high) == stats.bootstrap_mean_interval(doc)
    assert len(means.distribution) == stats.BOOTSTRAP_RESAMPLES


def test_point_biserial_and_pearson_by_formula():
    flags = np.array([1, 1, 1, 0, 0, 0, 0, 1], bool)
    scores = np.array([0.9, 0.7, 0.8, 0.1, 0.3, 0.2, 0.5, 0.4])
    m1, m0, s = scores[flags].mean(), scores[~flags].mean(), scores.std()  # population sd
    p = flags.mean()
    assert stats.point_biserial(flags, scores) == pytest.approx((m1 - m0) / s * math.sqrt(p * (1 - p)))
    words = np.array([3, 5, 2, 9, 7, 8, 4, 6])
    assert stats.pearson(words, scores) == pytest.approx(np.corrcoef(words, scores)[0, 1])
    assert math.isnan(stats.pearson([1, 2], [3, 3]))


def test_fleiss_kappa_on_fleiss_wikipedia_example():
    # 10 subjects, 14 raters, 5 categories (Fleiss 1971 layout): κ = 0.210
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert round(stats.fleiss_kappa(table), 3) == 0.210
    with pytest.raises(ValueError):
        stats.fleiss_kappa([[1, 1], [2, 1]])


def test_fleiss_with_two_raters_is_close_to_cohen():
    # Fleiss with m = 2 equals Scott's π, which uses pooled margins: (p_o - p_e)/(1 - p_e)
    pairs = [("a", "a")] * 20 + [("a", "b")] * 5 + [("b", "a")] * 10 + [("b", "b")] * 15
    counts = [[[x, y].count(c) for c in "ab"] for x, y in pairs]
    pooled_a = (25 + 30) / 100
    pe = pooled_a ** 2 + (1 - pooled_a) ** 2
    assert stats.fleiss_kappa(counts) == pytest.approx((0.7 - pe) / (1 - pe))


def test_pairwise_kappas_use_only_shared_subjects():
    rows = stats.pairwise_kappas({"human:a": ["right", "wrong", None, "partial"],
                                  "human:b": ["right", "wrong", "right", "wrong"]},
                                 ["right", "partial", "wrong"])
    assert len(rows) == 1 and rows[0]["n"] == 3
    assert rows[0]["confusion"] == [[1, 0, 0], [0, 0, 1], [0, 0, 1]]
    assert rows[0]["exact"] == pytest.approx(2 / 3)


def test_bootstrap_interval_is_scipys_bca_with_the_fixed_seed():
    values = np.array([0.2, 0.4, 0.1, 0.5, 0.3, 0.9, 0.0, 0.25])
    low, high = stats.bootstrap_mean_interval(values)
    expected = sps.bootstrap((values,), np.mean, n_resamples=stats.BOOTSTRAP_RESAMPLES, method="BCa",
                             rng=np.random.default_rng(stats.BOOTSTRAP_SEED)).confidence_interval
    assert (low, high) == pytest.approx((expected.low, expected.high))
    assert stats.bootstrap_mean_interval(values) == (low, high)  # same store, same interval


def test_bootstrap_interval_never_leaves_the_scores_range():
    bleu = np.array([0.0] * 40 + [0.05, 0.6])  # mostly zero, like BLEU-2 on short answers
    t_low = sps.t.interval(0.95, len(bleu) - 1, loc=bleu.mean(), scale=sps.sem(bleu))[0]
    assert t_low < 0  # Student-t would leave [0, 1]
    low, high = stats.bootstrap_mean_interval(bleu)
    assert 0 <= low <= bleu.mean() <= high <= 1
    assert stats.bootstrap_mean_interval([1.0] * 9 + [0.9])[1] <= 1


def test_bootstrap_interval_degenerate_samples():
    assert stats.bootstrap_mean_interval([0.3, 0.3, 0.3]) == pytest.approx((0.3, 0.3))
    assert all(math.isnan(x) for x in stats.bootstrap_mean_interval([0.3]))
    assert all(math.isnan(x) for x in stats.bootstrap_mean_interval([]))


def test_holm_by_hand_and_undefined_p_left_out():
    # sorted 0.01, 0.03, 0.04 times 3, 2, 1 -> 0.03, 0.06, 0.04 -> step-down maximum 0.03, 0.06, 0.06
    adjusted = stats.holm([0.01, 0.04, 0.03, math.nan])
    assert adjusted[:3] == pytest.approx([0.03, 0.06, 0.06]) and math.isnan(adjusted[3])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert stats.holm([]) == []


def test_holm_is_statsmodels_float_for_float():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(3)
    for size in (1, 2, 7, 40):
        p = rng.random(size) ** 3
        p[rng.random(size) < 0.2] = p[0]  # ties, which the order must break as statsmodels does
        assert stats.holm(list(p)) == list(multipletests(p, method="holm")[1])
