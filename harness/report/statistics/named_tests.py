"""The statistics the report needs, each small and named after its source.

scipy does the work wherever it has the test (Fisher, binomial, Spearman, Pearson, point-biserial,
Mann-Whitney, the bootstrap); the rest, Holm's correction among them, are the textbook
formulas, written out with the reference in a comment.
Every function returns plain Python floats, and ``nan`` where the statistic is undefined (no data,
a constant variable), so callers never have to catch anything.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy import stats as sps

__all__ = [
    "Fisher", "wilson_interval", "proportion", "partial_credit", "fisher_exact_2x2",
    "newcombe_interval", "cohen_kappa", "cohen_kappa_interval", "collapse_to_binary", "exact_agreement", "agreement_row",
    "mcnemar_exact", "spearman", "pearson", "point_biserial", "roc_auc", "roc_auc_test",
    "fleiss_kappa", "pairwise_kappas", "confusion_matrix", "Bootstrap", "bootstrap",
    "bootstrap_mean", "bootstrap_mean_interval", "holm", "chi2_sf", "chi2_log10_sf",
    "BOOTSTRAP_SEED", "BOOTSTRAP_RESAMPLES",
]

NAN = float("nan")


def proportion(k: int, n: int) -> float:
    return k / n if n else NAN


def partial_credit(right: int, partial: int, n: int) -> float:
    """Right counts 1, partially right 0.5 (the seed paper's partial-credit accuracy)."""
    return (right + 0.5 * partial) / n if n else NAN


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval (Wilson 1927, JASA 22:209), via scipy's ``binomtest``.

    Equal to the textbook (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n); a test checks it."""
    if n == 0:
        return NAN, NAN
    ci = sps.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


@dataclass(frozen=True)
class Fisher:
    odds_ratio: float  # the sample odds ratio ad/bc (inf when bc = 0 < ad; nan when 0/0)
    p: float           # two-sided


def fisher_exact_2x2(a: int, b: int, c: int, d: int) -> Fisher:
    """Fisher's exact test on [[a, b], [c, d]] (Fisher 1922; scipy's two-sided p).

    Rows are the two groups, columns right / not right. scipy's statistic for a 2×2 table is the
    sample (unconditional) odds ratio ad/bc — what the seed paper reports as "OR 139.3"."""
    result = sps.fisher_exact([[a, b], [c, d]], alternative="two-sided")
    return Fisher(odds_ratio=float(result.statistic), p=float(result.pvalue))


def newcombe_interval(k1: int, n1: int, k2: int, n2: int,
                      confidence: float = 0.95) -> tuple[float, float]:
    """Hybrid score interval for p1 - p2 of independent proportions (Newcombe 1998, Stat Med
    17:873, method 10): the Wilson limits of each proportion combined in quadrature."""
    if n1 == 0 or n2 == 0:
        return NAN, NAN
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1, confidence)
    l2, u2 = wilson_interval(k2, n2, confidence)
    diff = p1 - p2
    low = diff - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    high = diff + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return low, high


def chi2_sf(statistic: float, df: int) -> float:
    """The upper tail P(χ²_df ≥ statistic) by scipy's survival function: ``1 - cdf`` loses
    every digit below 1e-16 (it gives 0.0 for χ² = 825.4, whose tail is 1.6e-181)."""
    if math.isnan(statistic) or df < 1:
        return NAN
    return float(sps.chi2.sf(statistic, df))


_SMALLEST_SAFE = 1e-300  # below this a double loses digits, and scipy's tails underflow to 0


def chi2_log10_sf(statistic: float, df: int) -> float:
    """log10 of :func:`chi2_sf`, exact where the tail itself underflows a double (χ² ≳ 1400 at
    df = 1): mpmath's regularised upper incomplete gamma Q(df/2, χ²/2) in arbitrary precision."""
    p = chi2_sf(statistic, df)
    if math.isnan(p):
        return NAN
    if p >= _SMALLEST_SAFE:
        return math.log10(p)
    import mpmath  # only for tails a double cannot hold

    tail = mpmath.gammainc(df / 2, statistic / 2, mpmath.inf, regularized=True)
    return float(mpmath.log10(tail))


BOOTSTRAP_SEED = 20240613  # fixed, so a report rebuilt from the same store has the same intervals
BOOTSTRAP_RESAMPLES = 4999


@dataclass(frozen=True)
class Bootstrap:
    low: float
    high: float
    distribution: np.ndarray  # the statistic of every resample (none where nothing was resampled)


def bootstrap(samples: Sequence[Sequence[float]], statistic: Callable, *, method: str = "BCa",
              resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
              confidence: float = 0.95) -> Bootstrap:
    """scipy's seeded bootstrap of ``statistic`` over ``samples``, each resampled on its own
    (Efron 1987, JASA 82:171), so that a rebuilt report has the same interval. A BCa interval that
    is undefined (its acceleration is) falls back to the percentile interval of the same resamples.
    scipy's warnings (a degenerate resampled distribution) are silenced: the limits say it."""
    data = tuple(np.asarray(sample, dtype=float) for sample in samples)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = sps.bootstrap(data, statistic, confidence_level=confidence, n_resamples=resamples,
                               method=method, rng=np.random.default_rng(seed))
        low, high = result.confidence_interval
        if method == "BCa" and (math.isnan(low) or math.isnan(high)):
            low, high = sps.bootstrap(data, statistic, confidence_level=confidence, n_resamples=0,
                                      bootstrap_result=result, method="percentile").confidence_interval
    return Bootstrap(float(low), float(high), result.bootstrap_distribution)


def bootstrap_mean(values: Sequence[float], confidence: float = 0.95) -> Bootstrap:
    """BCa bootstrap interval of a mean, resampling the items (:func:`bootstrap`), with the
    resampled means.

    Its limits are quantiles of resampled means, so they stay inside the range of the scores
    themselves: a mean of scores in [0, 1] never gets a limit below 0 or above 1. Constant
    scores give the point interval and fewer than two NaN, neither resampling anything."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return Bootstrap(NAN, NAN, np.empty(0))
    if np.ptp(x) == 0:
        return Bootstrap(float(x.mean()), float(x.mean()), np.empty(0))
    result = bootstrap((x,), np.mean, confidence=confidence)
    return Bootstrap(max(result.low, float(x.min())), min(result.high, float(x.max())),
                     result.distribution)


def bootstrap_mean_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """The limits of :func:`bootstrap_mean`."""
    result = bootstrap_mean(values, confidence)
    return result.low, result.high


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values for one family of tests (Holm 1979, Scand J Stat 6:65),
    computed as statsmodels' ``multipletests(method="holm")`` does, float for float, without its
    ``gc.collect()`` per call (the probe validation adjusts thousands of families in
    scripts/negative_control.py). Undefined p-values stay undefined and do not count."""
    p = np.asarray(pvalues, dtype=float)
    adjusted = np.full(len(p), NAN)
    defined = np.flatnonzero(~np.isnan(p))
    order = defined[np.argsort(p[defined], kind="mergesort")]
    steps = np.maximum.accumulate(p[order] * np.arange(len(order), 0, -1))
    adjusted[order] = np.minimum(steps, 1.0)
    return [float(a) for a in adjusted]


def _disagreement_weights(k: int, weights: str | None) -> np.ndarray:
    i, j = np.indices((k, k))
    if weights is None:
        return (i != j).astype(float)
    if weights == "linear":
        return np.abs(i - j) / (k - 1)
    if weights == "quadratic":
        return ((i - j) / (k - 1)) ** 2
    raise ValueError(f"unknown weights {weights!r}")


def cohen_kappa(confusion: Sequence[Sequence[int]], weights: str | None = None) -> float:
    """Cohen's κ from a k×k confusion (rows rater A, columns rater B).

    κ_w = 1 - Σ w·O / Σ w·E with disagreement weights w and chance counts E from the margins
    (Cohen 1960, Educ Psychol Meas 20:37; weighted: Cohen 1968, Psychol Bull 70:213). With
    w = 1 off the diagonal it is the unweighted (p_o - p_e) / (1 - p_e); linear w = |i-j|/(k-1)."""
    observed = np.asarray(confusion, dtype=float)
    n = observed.sum()
    if n == 0:
        return NAN
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / n
    w = _disagreement_weights(len(observed), weights)
    chance_disagreement = (w * expected).sum()
    if chance_disagreement == 0:
        return NAN  # both raters used a single category: κ is undefined
    return float(1.0 - (w * observed).sum() / chance_disagreement)


def cohen_kappa_interval(confusion: Sequence[Sequence[int]],
                         confidence: float = 0.95) -> tuple[float, float]:
    """The asymptotic (Wald) interval of unweighted Cohen's κ: κ ± z·SE, SE from the large-sample
    variance of Fleiss, Cohen & Everitt (1969, Psychol Bull 72:323), as statsmodels'
    ``cohens_kappa`` has it; clipped to [-1, 1]. NaN where κ is undefined."""
    p = np.asarray(confusion, dtype=float)
    n, kappa = p.sum(), cohen_kappa(confusion)
    if n == 0 or math.isnan(kappa):
        return (NAN, NAN)
    p = p / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    chance = float(rows @ cols)
    a = float(np.sum(np.diag(p) * (1 - (rows + cols) * (1 - kappa)) ** 2))
    off = p * (cols[:, None] + rows[None, :]) ** 2  # p_ij (p_.i + p_j.)^2
    b = (1 - kappa) ** 2 * float(off.sum() - np.trace(off))
    c = (kappa - chance * (1 - kappa)) ** 2
    half = float(sps.norm.ppf(0.5 + confidence / 2)) * math.sqrt(max(a + b - c, 0.0) / n) / (1 - chance)
    return (max(-1.0, kappa - half), min(1.0, kappa + half))


def collapse_to_binary(confusion: Sequence[Sequence[int]]) -> list[list[int]]:
    """3×3 (right, partial, wrong) -> 2×2 (right, not right)."""
    m = np.asarray(confusion, dtype=int)
    return [[int(m[0, 0]), int(m[0, 1:].sum())], [int(m[1:, 0].sum()), int(m[1:, 1:].sum())]]


def exact_agreement(confusion: Sequence[Sequence[int]]) -> float:
    m = np.asarray(confusion, dtype=float)
    return float(np.trace(m) / m.sum()) if m.sum() else NAN


def agreement_row(confusion: Sequence[Sequence[int]]) -> dict:
    """Two raters' agreement from their confusion table: n, exact agreement, Cohen's κ unweighted,
    linearly weighted and on the first category against the rest (right / not right)."""
    return {"n": int(np.sum(confusion)), "exact": exact_agreement(confusion),
            "kappa": cohen_kappa(confusion), "kappa_linear": cohen_kappa(confusion, "linear"),
            "kappa_binary": cohen_kappa(collapse_to_binary(confusion)), "confusion": confusion}


def mcnemar_exact(b: int, c: int) -> float:
    """Exact McNemar test: the discordant pairs b (A right, B not) and c (B right, A not) are
    Binomial(b + c, 1/2) under H0 (McNemar 1947; Agresti, Categorical Data Analysis §10.1.4).
    Two-sided p; 1.0 when there are no discordant pairs."""
    if b + c == 0:
        return 1.0
    return float(sps.binomtest(b, b + c, 0.5, alternative="two-sided").pvalue)


def _defined(x: Sequence[float], y: Sequence[float]) -> bool:
    """Correlations need at least two points and some variation in both variables."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return len(x) >= 2 and len(x) == len(y) and np.ptp(x) > 0 and np.ptp(y) > 0


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's ρ: Pearson's r of the average ranks, so ties share a rank (scipy)."""
    return float(sps.spearmanr(x, y).statistic) if _defined(x, y) else NAN


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    return float(sps.pearsonr(x, y).statistic) if _defined(x, y) else NAN


def point_biserial(indicator: Sequence[bool], scores: Sequence[float]) -> float:
    """Point-biserial r between a 0/1 indicator and a score: Pearson's r with a dichotomous
    variable (scipy's ``pointbiserialr``)."""
    flags = np.asarray(indicator, dtype=float)
    if not _defined(flags, scores):
        return NAN
    return float(sps.pointbiserialr(flags, scores).statistic)


def roc_auc(scores: Sequence[float], positive: Sequence[bool]) -> float:
    """Area under the ROC curve, AUC = U / (n₁·n₀) with U the Mann-Whitney statistic of the
    positives (Hanley & McNeil 1982, Radiology 143:29). scipy ranks ties at their midrank, so a
    tied positive/negative pair counts one half — the trapezoidal AUC."""
    return roc_auc_test(scores, positive)[0]


def roc_auc_test(scores: Sequence[float], positive: Sequence[bool]) -> tuple[float, float]:
    """:func:`roc_auc` and the two-sided Mann-Whitney p of the same test (scipy's default
    method: exact for small samples without ties, else the normal approximation)."""
    values = np.asarray(scores, dtype=float)
    flags = np.asarray(positive, dtype=bool)
    pos, neg = values[flags], values[~flags]
    if len(pos) == 0 or len(neg) == 0:
        return NAN, NAN
    test = sps.mannwhitneyu(pos, neg, alternative="two-sided")
    return float(test.statistic / (len(pos) * len(neg))), float(test.pvalue)


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float:
    """Fleiss' κ (Fleiss 1971, Psychol Bull 76:378) from an N×k table: row i counts how many of
    the m raters put subject i in each category; every row must sum to the same m ≥ 2."""
    table = np.asarray(counts, dtype=float)
    if table.size == 0:
        return NAN
    m = table.sum(axis=1)
    if m.min() != m.max() or m[0] < 2:
        raise ValueError("Fleiss' kappa needs the same number (≥ 2) of ratings per subject")
    n_subjects, raters = len(table), m[0]
    p_category = table.sum(axis=0) / (n_subjects * raters)
    p_subject = ((table ** 2).sum(axis=1) - raters) / (raters * (raters - 1))
    p_bar, p_e = p_subject.mean(), (p_category ** 2).sum()
    return float((p_bar - p_e) / (1 - p_e)) if p_e < 1 else NAN


def pairwise_kappas(ratings: dict[str, Sequence[str | None]],
                    categories: Sequence[str]) -> list[dict]:
    """:func:`agreement_row` for every pair of raters on the subjects both rated.

    ``ratings`` maps rater -> one label per subject (None where that rater gave none)."""
    rows = []
    for a, b in combinations(sorted(ratings), 2):
        pairs = [(x, y) for x, y in zip(ratings[a], ratings[b]) if x is not None and y is not None]
        rows.append({"rater_a": a, "rater_b": b,
                     **agreement_row(confusion_matrix(pairs, categories))})
    return rows


def confusion_matrix(pairs: Sequence[tuple[str, str]], categories: Sequence[str]) -> list[list[int]]:
    index = {c: i for i, c in enumerate(categories)}
    matrix = [[0] * len(categories) for _ in categories]
    for a, b in pairs:
        matrix[index[a]][index[b]] += 1
    return matrix
