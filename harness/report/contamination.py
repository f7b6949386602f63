"""The contamination question across models: is a documented item easier, pooled over models, and
does that gap differ between models?

Two answers, both statsmodels:

* ``cmh``: the Cochran–Mantel–Haenszel odds ratio of a right answer, documented vs undocumented,
  pooled over the models as strata, with the CMH test of OR = 1 and the Breslow–Day test that
  every model has the same odds ratio (``StratifiedTable``).
* ``logistic``: ``right ~ subset * model`` with standard errors clustered by item (each item is
  answered by every model, so its answers are not independent); a Wald test of the interaction
  terms asks whether the gap differs between models. Where a (model, subset) cell is all right or
  all wrong the interaction model has no finite estimate (perfect separation): then the main-effects
  model ``right ~ subset + model`` gives the common gap instead, and a note says why.

Degenerate data (one model, a model without items on one side, no variation) yields ``None`` and a
note, never an exception.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from statsmodels.stats.contingency_tables import StratifiedTable

__all__ = ["cmh", "logistic"]


def _float(x: Any) -> float:
    value = float(x)
    return value if math.isfinite(value) else math.nan


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
    null = table.test_null_odds(correction=False)
    result = {"models": used, "odds_ratio": _float(table.oddsratio_pooled), "ci_low": _float(low),
              "ci_high": _float(high), "cmh_statistic": _float(null.statistic), "cmh_p": _float(null.pvalue),
              "breslow_day_statistic": None, "breslow_day_p": None}
    result.update(_breslow_day(table, len(tables), notes))
    return result


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
        test = table.test_equal_odds(adjust=False)
    statistic, p = _float(test.statistic), _float(test.pvalue)
    if math.isnan(p):
        notes.append({"section": "cmh", "reason": "the Breslow–Day test is undefined on these tables "
                      "(a model's expected counts are zero)"})
    return {"breslow_day_statistic": statistic, "breslow_day_p": p}


# -- logistic regression with item-clustered standard errors -------------------------------------

def logistic(frame: pd.DataFrame, contrast: tuple[str, str], order: list[str], notes: list) -> dict | None:
    """``right ~ subset * model`` (else ``subset + model``), SEs clustered by item."""
    data = _design(frame, contrast, order)
    reason = _unfit_reason(data)
    if reason:
        notes.append({"section": "logistic", "reason": reason})
        return None
    separated = _separated_cells(data)
    if separated:
        notes.append({"section": "logistic", "reason": "perfect separation (all right or all wrong) in "
                      f"{', '.join(separated)}: the interaction model has no finite estimate, so the "
                      "main-effects model right ~ subset + model gives the common gap"})
        return _fit(data, "right ~ documented + C(model)", interaction=False, notes=notes)
    return _fit(data, "right ~ documented * C(model)", interaction=True, notes=notes)


def _design(frame: pd.DataFrame, contrast: tuple[str, str], order: list[str]) -> pd.DataFrame:
    """One row per labelled (item, model) cell of the two subsets; the first model is the reference."""
    cells = frame[frame["human"].notna() & frame["subset"].isin(contrast)]
    data = pd.DataFrame({"right": (cells["human"] == "right").astype(int).to_numpy(),
                         "documented": (cells["subset"] == contrast[0]).astype(int).to_numpy(),
                         "model": pd.Categorical(cells["model"], categories=order),
                         "item": cells["item_id"].to_numpy()})
    data["model"] = data["model"].cat.remove_unused_categories()
    return data


def _unfit_reason(data: pd.DataFrame) -> str | None:
    if data.empty or data["documented"].nunique() < 2:
        return "no labelled items on both subsets"
    if data["right"].nunique() < 2:
        return "every labelled answer has the same label: nothing to model"
    if data["item"].nunique() < 3:
        return "fewer than three items: clustered standard errors need more"
    return None


def _separated_cells(data: pd.DataFrame) -> list[str]:
    share = data.groupby(["model", "documented"], observed=True)["right"].mean()
    return [f"{model} ({'documented' if documented else 'undocumented'})"
            for (model, documented), value in share.items() if value in (0.0, 1.0)]


def _fit(data: pd.DataFrame, formula: str, *, interaction: bool, notes: list) -> dict | None:
    groups = pd.factorize(data["item"])[0]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = smf.logit(formula, data).fit(disp=0, cov_type="cluster", cov_kwds={"groups": groups})
    except Exception as exc:  # statsmodels signals separation and singular designs by raising
        notes.append({"section": "logistic", "reason": f"the model {formula} could not be fitted "
                      f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no detail'})"})
        return None
    if not _finite(result):
        notes.append({"section": "logistic", "reason": f"the model {formula} has no finite estimate "
                      "(quasi-separation)"})
        return None
    return _summary(result, formula, interaction, data)


def _finite(result: Any) -> bool:
    """Separation that slips past the cell check shows as huge or undefined coefficients."""
    params, bse = np.asarray(result.params), np.asarray(result.bse)
    return bool(np.all(np.isfinite(params)) and np.all(np.isfinite(bse)) and np.max(np.abs(params)) < 15)


def _summary(result: Any, formula: str, interaction: bool, data: pd.DataFrame) -> dict[str, Any]:
    ci = result.conf_int()
    terms = [{"term": _term_name(name), "odds_ratio": _float(np.exp(result.params[name])),
              "ci_low": _float(np.exp(ci.loc[name, 0])), "ci_high": _float(np.exp(ci.loc[name, 1])),
              "p": _float(result.pvalues[name])} for name in result.params.index if name != "Intercept"]
    subset = terms[[n for n in result.params.index if n != "Intercept"].index("documented")]
    summary = {"formula": formula.replace("documented", "subset").replace("C(model)", "model"),
               "interaction": interaction, "reference_model": str(data["model"].cat.categories[0]),
               "n": int(result.nobs), "items": int(data["item"].nunique()), "terms": terms,
               **{f"documented_{k}": subset[k] for k in ("odds_ratio", "ci_low", "ci_high", "p")},
               "interaction_wald_statistic": None, "interaction_wald_df": None, "interaction_wald_p": None}
    if interaction:
        summary.update(_interaction_test(result))
    return summary


def _term_name(name: str) -> str:
    """statsmodels' ``documented:C(model)[T.x]`` -> ``documented × model x``."""
    if name == "documented":
        return "documented subset (vs undocumented)"
    return name.replace("C(model)[T.", "model ").replace("]", "").replace(":", " × ")


def _interaction_test(result: Any) -> dict[str, Any]:
    """Joint Wald test (cluster-robust covariance) that every interaction coefficient is zero."""
    rows = [i for i, name in enumerate(result.params.index) if ":" in name]
    if not rows:
        return {}
    restriction = np.eye(len(result.params))[rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        test = result.wald_test(restriction, scalar=True)
    return {"interaction_wald_statistic": _float(test.statistic), "interaction_wald_df": len(rows),
            "interaction_wald_p": _float(test.pvalue)}
