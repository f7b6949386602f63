"""The contamination question across models: is a documented item easier, pooled over models, and
does that gap differ between models?

Two answers, both statsmodels:

* ``cmh``: the Mantel–Haenszel odds ratio of a right answer, documented vs undocumented, pooled
  over the models as strata, its 95% interval from the Robins–Breslow–Greenland variance of its
  log, the Cochran–Mantel–Haenszel χ² test of OR = 1 without continuity correction, and the
  Breslow–Day test that every model has the same odds ratio, with Tarone's correction (the usual
  companion of the MH estimator: without it the statistic is not χ² under the null when the MH
  estimate is plugged in) (``StratifiedTable``).
* ``logistic`` (:mod:`contam.harness.report.statistics.logistic`): ``right ~ subset * model`` with item-clustered
  standard errors.

Every tail is a survival function (``chi2.sf``): statsmodels' own p-values are ``1 - cdf`` and
give 0.0 below 1e-16. A tail too small for a double comes with its log10 as well
(``*_log10_p``), so that the report prints its digits, never a bound.

Degenerate data (a model without items on one side, no variation) yields ``None`` and a note,
never an exception.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from statsmodels.stats.contingency_tables import StratifiedTable

from contam.harness.report.statistics import named_tests as stats
from contam.harness.report.inputs.cells import nan_if_infinite
from contam.harness.report.statistics.logistic import logistic

__all__ = ["cmh", "logistic", "CMH_METHODS"]

CMH_METHODS = {  # what the report text says about each test, kept beside the code that runs it
    "cmh": "Cochran–Mantel–Haenszel χ² without continuity correction",
    "interval": "Robins–Breslow–Greenland variance of the log odds ratio",
    "breslow_day": "Breslow–Day with Tarone's correction",
}


# -- Cochran–Mantel–Haenszel and Breslow–Day -----------------------------------------------------

def cmh(gap_rows: list[dict], notes: list) -> dict[str, Any] | None:
    """Pooled OR over the models' 2×2 tables (rows documented / undocumented, columns right / not)."""
    tables, used = _strata(gap_rows)
    if not tables:
        notes.append({"section": "cmh", "reason": "no model has labelled items on both subsets"})
        return None
    with np.errstate(divide="ignore", invalid="ignore"):  # a zero denominator is handled below
        table = StratifiedTable(tables)
        pooled = table.oddsratio_pooled
    if not np.isfinite(pooled):
        notes.append({"section": "cmh", "reason": _UNDEFINED_POOLED["nan" if np.isnan(pooled) else "inf"]})
        return None
    low, high = table.oddsratio_pooled_confint()
    statistic = nan_if_infinite(table.test_null_odds(correction=False).statistic)
    result = {"models": used, "odds_ratio": nan_if_infinite(table.oddsratio_pooled),
              "ci_low": nan_if_infinite(low), "ci_high": nan_if_infinite(high),
              **_chi2("cmh", statistic, 1), "methods": CMH_METHODS,
              "breslow_day_statistic": None, "breslow_day_p": None, "breslow_day_log10_p": None}
    result.update(_breslow_day(table, len(tables), notes))
    return result


def _chi2(name: str, statistic: float, df: int) -> dict[str, float]:
    """The statistic, its upper tail, and the tail's log10 (digits below a double's range)."""
    return {f"{name}_statistic": statistic, f"{name}_df": df, f"{name}_p": stats.chi2_sf(statistic, df),
            f"{name}_log10_p": stats.chi2_log10_sf(statistic, df)}


_UNDEFINED_POOLED = {
    "inf": "the pooled odds ratio is infinite: no model has a not-right documented answer together "
           "with a right undocumented one",
    "nan": "the pooled odds ratio is undefined (0/0): every model's 2×2 table has a zero on both "
           "of its diagonals",
}


def _strata(gap_rows: list[dict]) -> tuple[list[np.ndarray], list[str]]:
    """One 2×2 per model that has items on both sides; the others would add nothing but zeros."""
    tables, used = [], []
    for r in gap_rows:
        dn, un = r["documented_n"], r["undocumented_n"]
        if dn and un:
            dk, uk = r["documented_right"], r["undocumented_right"]
            tables.append(np.array([[dk, dn - dk], [uk, un - uk]], dtype=float))
            used.append(r["model"])
    return tables, used


def _breslow_day(table: StratifiedTable, strata: int, notes: list) -> dict[str, Any]:
    if strata < 2:
        notes.append({"section": "cmh", "reason": "one model only: the Breslow–Day test of equal odds "
                      "ratios needs at least two"})
        return {}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        statistic = nan_if_infinite(table.test_equal_odds(adjust=True).statistic)  # Tarone's correction
    result = _chi2("breslow_day", statistic, strata - 1)
    if math.isnan(result["breslow_day_p"]):
        notes.append({"section": "cmh", "reason": "the Breslow–Day test is undefined on these tables "
                      "(a model's expected counts are zero)"})
    return result
