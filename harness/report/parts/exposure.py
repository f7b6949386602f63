"""The Exposure section's numbers (``[study] exposure`` names a numeric item column, say log10 of
the web pages about an item): does the chance of a correct answer rise with exposure?

* per model, the logistic regression ``correct ~ exposure``: the odds ratio per unit of exposure
  with its 95% Wald interval, the Wald p and the likelihood-ratio p (against the intercept-only
  model), and the exposure range it covers;
* pooled, ``correct ~ exposure + model`` (a fixed effect per model), standard errors clustered by
  item with the same small-sample correction as the contamination model
  (:mod:`contam.harness.report.statistics.logistic`): every model answers the same items, so one item's cells are
  not independent;
* accuracy in exposure quintiles (the items' quintiles, the same bins for every model), with
  Wilson intervals, for the figure (:mod:`contam.harness.report.plots.exposure`).

"Correct" is :mod:`contam.harness.report.inputs.correct`'s rule. A fit the data cannot give (one outcome only,
no spread in exposure, perfect separation) is left undefined and its row says why.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import statsmodels.api as sm

from contam.harness.report.statistics import named_tests as stats
from contam.harness.report.inputs.cells import nan_if_infinite
from contam.harness.report.inputs.correct import correct_cells, source_counts
from contam.harness.report.inputs.item_fields import numeric_column
from contam.harness.report.statistics.logistic import CLUSTER_CORRECTION
from contam.metrics.outcome import Outcome

__all__ = ["exposure", "model_fit", "pooled_fit", "quintiles", "KEY", "FIGURE"]

KEY = "[study] exposure"
FIGURE = "fig5_exposure"  # drawn by contam.harness.report.plots.exposure
NAN = float("nan")
_FIT_KEYS = ("intercept", "slope", "odds_ratio", "ci_low", "ci_high", "wald_p", "lr_statistic", "lr_p")


def exposure(frame: pd.DataFrame, items: pd.DataFrame, column: str, order: list[str],
             notes: list, outcome: Outcome | None = None) -> dict[str, Any] | None:
    """The section's numbers, or None when every item's value is blank (a note says so); raises
    UserError on a value that is not a number."""
    values = numeric_column(items, column, KEY)
    if values.isna().all():
        notes.append({"section": "exposure", "reason": f"every item's {column!r} value is blank: no exposure fit"})
        return None
    known = frame[frame["item_seq"].map(values).notna()]
    data = correct_cells(known, outcome)
    data = data.assign(exposure=data["item_seq"].map(values).astype(float))
    without = int(values.isna().sum())
    if without:
        notes.append({"section": "exposure", "reason": f"{without} item(s) have no {column!r} value and "
                      "are left out of the exposure fits"})
    models = [m for m in order if m in set(data["model"])]
    return {"column": column, "correct": source_counts(data, known, outcome), "items": int(data["item_seq"].nunique()),
            "items_without_value": without,
            "per_model": [model_fit(model, data[data["model"] == model]) for model in models],
            "pooled": pooled_fit(data, models, notes) if models else None, "quintiles": quintiles(data, models)}


# -- one model ------------------------------------------------------------------------------------

def model_fit(model: str, data: pd.DataFrame) -> dict[str, Any]:
    """``correct ~ exposure`` for one model's cells (columns ``correct``, ``exposure``)."""
    x, y = data["exposure"].to_numpy(float), data["correct"].to_numpy(int)
    row = {"model": model, "n": len(y), "right": int(y.sum()), "items": int(data["item_seq"].nunique()),
           "exposure_min": float(x.min()) if len(x) else NAN, "exposure_max": float(x.max()) if len(x) else NAN}
    reason = unfit_reason(x, y)
    if reason:
        return {**row, **dict.fromkeys(_FIT_KEYS, NAN), "reason": reason}
    result = _quietly(sm.Logit(y, sm.add_constant(x, has_constant="add")))
    low, high = result.conf_int()[1]
    return {**row, "intercept": float(result.params[0]), "slope": float(result.params[1]),
            "odds_ratio": nan_if_infinite(np.exp(result.params[1])), "ci_low": nan_if_infinite(np.exp(low)),
            "ci_high": nan_if_infinite(np.exp(high)), "wald_p": float(result.pvalues[1]),
            "lr_statistic": float(result.llr), "lr_p": float(result.llr_pvalue), "reason": None}


def unfit_reason(x: np.ndarray, y: np.ndarray) -> str | None:
    """Why ``y ~ x`` has no finite maximum-likelihood estimate, or None. With one predictor the
    estimate exists exactly when the exposures of the right and the wrong answers overlap."""
    if len(y) < 3:
        return "fewer than three cells"
    if y.min() == y.max():
        return "every answer is " + ("right" if y[0] else "not right") + ": nothing to fit"
    if x.min() == x.max():
        return "every item has the same exposure"
    right, wrong = x[y == 1], x[y == 0]
    if wrong.max() <= right.min() or right.max() <= wrong.min():
        return "perfect separation (the right answers' exposures do not overlap the others'): no finite odds ratio"
    return None


def _quietly(model: Any, **fit: Any) -> Any:
    """statsmodels warns on every small-sample fit; the rows say what matters."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return model.fit(disp=0, **fit)


# -- pooled over models ---------------------------------------------------------------------------

def pooled_fit(data: pd.DataFrame, models: list[str], notes: list) -> dict[str, Any] | None:
    """``correct ~ exposure + model``, standard errors clustered by item; the first model that can
    enter is the reference. A model whose answers are all right or all wrong has no finite fixed
    effect and is left out (a note says so)."""
    usable = [m for m in models if data.loc[data["model"] == m, "correct"].nunique() == 2]
    left_out = [m for m in models if m not in usable]
    if left_out:
        notes.append({"section": "exposure", "reason": "the pooled fit leaves out "
                      f"{', '.join(left_out)}: every answer the same, so no finite model effect"})
    cells = data[data["model"].isin(usable)]
    reason = _pooled_unfit_reason(cells)
    if reason:
        notes.append({"section": "exposure", "reason": f"no pooled fit: {reason}"})
        return None
    if _separated(cells, usable):
        return _not_estimable(cells, usable, "not estimable: separation (within every model the right "
                                             "answers' exposures do not overlap the others')")
    try:
        return _pooled_result(cells, usable)
    except (np.linalg.LinAlgError, ValueError) as exc:  # a singular design: statsmodels raises
        notes.append({"section": "exposure", "reason": f"no pooled fit: {type(exc).__name__}: {exc}"})
        return None


def _pooled_unfit_reason(cells: pd.DataFrame) -> str | None:
    if cells.empty:
        return "no model has both right and not-right answers"
    if cells["item_seq"].nunique() < 3:
        return "fewer than three items: clustered standard errors need more"
    return unfit_reason(cells["exposure"].to_numpy(float), cells["correct"].to_numpy(int))


def _separation_side(x: np.ndarray, y: np.ndarray) -> int:
    """+1 when every right answer's exposure is at or above every wrong one's, -1 below, else 0."""
    right, wrong = x[y == 1], x[y == 0]
    return 1 if wrong.max() <= right.min() else -1 if right.max() <= wrong.min() else 0


def _separated(cells: pd.DataFrame, models: list[str]) -> bool:
    """The per-model check, pooled: with a fixed effect per model the slope has no finite estimate
    exactly when every model is separated by exposure, all in the same direction."""
    sides = {_separation_side(cells.loc[cells["model"] == m, "exposure"].to_numpy(float),
                              cells.loc[cells["model"] == m, "correct"].to_numpy(int)) for m in models}
    return len(sides) == 1 and 0 not in sides


def _pooled_row(cells: pd.DataFrame, models: list[str]) -> dict[str, Any]:
    """What every pooled row says of its fit, estimable or not."""
    return {"formula": "correct ~ exposure + model" if len(models) > 1 else "correct ~ exposure",
            "models": models, "reference_model": models[0], "n": len(cells),
            "items": int(cells["item_seq"].nunique()), "covariance": "item-clustered",
            "cluster_correction": CLUSTER_CORRECTION}


def _not_estimable(cells: pd.DataFrame, models: list[str], reason: str) -> dict[str, Any]:
    return {**_pooled_row(cells, models), **dict.fromkeys(("slope", "se", "odds_ratio", "ci_low", "ci_high",
                                                           "wald_p"), NAN), "reason": reason}


def design(cells: pd.DataFrame, models: list[str]) -> np.ndarray:
    """Columns: the intercept, exposure, then one indicator per model after the first."""
    dummies = [(cells["model"] == m).to_numpy(float) for m in models[1:]]
    return np.column_stack([np.ones(len(cells)), cells["exposure"].to_numpy(float), *dummies])


def _pooled_result(cells: pd.DataFrame, models: list[str]) -> dict[str, Any] | None:
    groups = pd.factorize(cells["item_seq"])[0]
    result = _quietly(sm.Logit(cells["correct"].to_numpy(int), design(cells, models)),
                      cov_type="cluster", cov_kwds={"groups": groups, "use_correction": True})
    if not result.mle_retvals.get("converged", True):
        return _not_estimable(cells, models, "not estimable: the fit did not converge")
    low, high = result.conf_int()[1]
    return {**_pooled_row(cells, models), "slope": float(result.params[1]),
            "se": float(result.bse[1]), "odds_ratio": nan_if_infinite(np.exp(result.params[1])),
            "ci_low": nan_if_infinite(np.exp(low)), "ci_high": nan_if_infinite(np.exp(high)),
            "wald_p": float(result.pvalues[1]), "reason": None}


# -- accuracy in quintiles ------------------------------------------------------------------------

def quintiles(data: pd.DataFrame, models: list[str]) -> list[dict[str, Any]]:
    """Per model and exposure quintile of the items (fewer bins where values tie): n, right,
    accuracy with its Wilson interval, the bin's edges and the mean exposure of its cells."""
    per_item = data.drop_duplicates("item_seq")["exposure"]
    if per_item.nunique() < 2:
        return []
    edges = np.unique(np.quantile(per_item, np.linspace(0, 1, 6)))
    bins = pd.cut(data["exposure"], edges, include_lowest=True, labels=False)
    rows = []
    for model in models:
        for q in range(len(edges) - 1):
            cell = data[(data["model"] == model) & (bins == q)]
            rows.append(_quintile_row(model, q, edges, cell))
    return rows


def _quintile_row(model: str, q: int, edges: np.ndarray, cell: pd.DataFrame) -> dict[str, Any]:
    n, right = len(cell), int(cell["correct"].sum())
    low, high = stats.wilson_interval(right, n)
    return {"model": model, "quintile": q + 1, "exposure_low": float(edges[q]),
            "exposure_high": float(edges[q + 1]),
            "exposure_mean": float(cell["exposure"].mean()) if n else NAN, "n": n, "right": right,
            "accuracy": stats.proportion(right, n), "ci_low": low, "ci_high": high}
