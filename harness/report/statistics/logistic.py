"""The logistic model of the contamination gap: ``right ~ subset * model`` over the (item, model)
cells, standard errors clustered by item (each item is answered by every model, so its answers are
not independent), with statsmodels' small-sample correction G/(G−1)·(N−1)/(N−K) and normal
reference distributions. A joint Wald test of the interaction terms asks whether the gap differs
between models.

What is fitted depends on the data, and the result says which:

* one model: ``right ~ subset`` (whether the gap differs between models needs two);
* a (model, subset) cell all right or all wrong: the interaction model has no finite estimate
  (perfect separation), so the main-effects model ``right ~ subset + model`` gives the common gap;
* otherwise the interaction model.

Model labels enter the formula as safe codes (``m0``, ``m1``, ...) and are mapped back for the
term names, so a label such as ``gemma4:31b-cloud`` is never read as an interaction term.
Where the estimates are finite but the clustered covariance is singular (two models with the same
label on every item make their cluster scores collinear), the model-based covariance stands in and
a note says so: that is not separation.
"""

from __future__ import annotations

import re
import warnings
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

from contam.harness.report.inputs.cells import nan_if_infinite

__all__ = ["logistic", "CLUSTER_CORRECTION"]

CLUSTER_CORRECTION = "G/(G−1)·(N−1)/(N−K)"  # statsmodels' cov_cluster(use_correction=True)
_INTERACTION_TERM = "documented:C(model)"
_LEVEL = re.compile(r"\[T\.(m\d+)\]")


def logistic(frame: pd.DataFrame, contrast: tuple[str, str], order: list[str], notes: list) -> dict | None:
    """The model the data allow (see the module docstring), or None and a note saying why."""
    data, labels = _design(frame, contrast, order)
    _note_one_sided(frame, contrast, order, labels, notes)
    reason = _unfit_reason(data)
    if reason:
        notes.append({"section": "logistic", "reason": reason})
        return None
    formula, interaction = _formula(data, labels, notes)
    return _fit(data, labels, formula, interaction=interaction, notes=notes)


def _design(frame: pd.DataFrame, contrast: tuple[str, str], order: list[str]) -> tuple[pd.DataFrame, dict]:
    """One row per labelled (item, model) cell of the two subsets; the first model is the reference.
    Returns the frame (models as codes) and code -> model label."""
    cells = frame[frame["human"].notna() & frame["subset"].isin(contrast)]
    used = _two_sided(cells, order)
    cells = cells[cells["model"].isin(used)]
    labels = {f"m{i}": model for i, model in enumerate(used)}
    codes = {model: code for code, model in labels.items()}
    data = pd.DataFrame({"right": (cells["human"] == "right").astype(int).to_numpy(),
                         "documented": (cells["subset"] == contrast[0]).astype(int).to_numpy(),
                         "model": pd.Categorical(cells["model"].map(codes), categories=list(labels)),
                         "item": cells["item_seq"].to_numpy()})
    return data, labels


def _two_sided(cells: pd.DataFrame, order: list[str]) -> list[str]:
    """The models with labelled cells on both subsets: one labelled on one side only would make the
    design singular (its subset effect cannot be told from its model effect)."""
    sides = cells.groupby("model", observed=True)["subset"].nunique()
    return [m for m in order if sides.get(m, 0) == 2]


def _note_one_sided(frame: pd.DataFrame, contrast: tuple[str, str], order: list[str], labels: dict,
                    notes: list) -> None:
    labelled = set(frame.loc[frame["human"].notna() & frame["subset"].isin(contrast), "model"])
    one_sided = [m for m in order if m in labelled and m not in labels.values()]
    if one_sided:
        notes.append({"section": "logistic", "reason": f"{', '.join(one_sided)} labelled on one subset only: "
                      "left out of the logistic model (no gap to model); the other models are fitted"})


def _unfit_reason(data: pd.DataFrame) -> str | None:
    if data.empty or data["documented"].nunique() < 2:
        return "no labelled items on both subsets"
    if data["right"].nunique() < 2:
        return "every labelled answer has the same label: nothing to model"
    if data["item"].nunique() < 3:
        return "fewer than three items: clustered standard errors need more"
    return None


def _formula(data: pd.DataFrame, labels: dict, notes: list) -> tuple[str, bool]:
    """(formula, has interaction terms)."""
    if len(labels) == 1:
        return "right ~ documented", False
    separated = _separated_cells(data, labels)
    if separated:
        notes.append({"section": "logistic", "reason": "perfect separation (all right or all wrong) in "
                      f"{', '.join(separated)}: the interaction model has no finite estimate, so the "
                      "main-effects model right ~ subset + model gives the common gap"})
        return "right ~ documented + C(model)", False
    return "right ~ documented * C(model)", True


def _separated_cells(data: pd.DataFrame, labels: dict) -> list[str]:
    share = data.groupby(["model", "documented"], observed=True)["right"].mean()
    return [f"{labels[code]} ({'documented' if documented else 'undocumented'})"
            for (code, documented), value in share.items() if value in (0.0, 1.0)]


# -- fitting and diagnosing -----------------------------------------------------------------------

def _fit(data: pd.DataFrame, labels: dict, formula: str, *, interaction: bool, notes: list) -> dict | None:
    shown = _shown(formula)
    groups = pd.factorize(data["item"])[0]
    try:
        result = _quietly(smf.logit(formula, data), cov_type="cluster",
                          cov_kwds={"groups": groups, "use_correction": True})
    except Exception as exc:  # statsmodels signals separation and singular designs by raising
        notes.append({"section": "logistic", "reason": f"the model {shown} could not be fitted "
                      f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no detail'})"})
        return None
    if not _finite_estimate(result):
        notes.append({"section": "logistic", "reason": f"the model {shown} has no finite estimate "
                      "(quasi-separation: some coefficient runs off to infinity)"})
        return None
    covariance = "item-clustered"
    if not _regular(result):
        result, covariance = _model_based(data, labels, formula, result, notes)
        if result is None:
            return None
    return _summary(result, shown, interaction, data, labels, covariance)


def _quietly(model: Any, **fit: Any) -> Any:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return model.fit(disp=0, **fit)


def _finite_estimate(result: Any) -> bool:
    """Separation that slips past the cell check shows as huge or undefined coefficients."""
    params = np.asarray(result.params)
    return bool(np.all(np.isfinite(params)) and np.max(np.abs(params)) < 15)


def _regular(result: Any) -> bool:
    """A covariance that is finite and of full rank, so every SE and the Wald test are defined."""
    cov = np.asarray(result.cov_params(), dtype=float)
    return bool(np.all(np.isfinite(cov)) and np.linalg.matrix_rank(cov) == len(cov))


def _model_based(data, labels, formula, clustered, notes) -> tuple[Any, str]:
    """The same (finite) estimates with the model-based covariance, and a note saying why."""
    rank = np.linalg.matrix_rank(np.nan_to_num(np.asarray(clustered.cov_params(), dtype=float)))
    why = _identical_models(data, labels)
    result = _quietly(smf.logit(formula, data))
    if not _regular(result):
        notes.append({"section": "logistic", "reason": f"the model {_shown(formula)} has finite estimates "
                      "but a singular covariance, clustered or not: no standard error is defined"})
        return None, ""
    notes.append({"section": "logistic", "reason": f"the item-clustered covariance of {_shown(formula)} is "
                  f"singular (rank {rank} of {len(clustered.params)}{why}); the estimates are finite, so "
                  "intervals and tests use the model-based covariance, which treats the answers to one "
                  "item as independent"})
    return result, "model-based"


def _identical_models(data: pd.DataFrame, labels: dict) -> str:
    """``: a and b have the same label on every item``, the usual cause, when it is the cause."""
    wide = data.pivot_table(index="item", columns="model", values="right", observed=True)
    pairs = [f"{labels[a]} and {labels[b]}" for a, b in combinations(wide.columns, 2)
             if wide[a].equals(wide[b])]
    return f": {'; '.join(pairs)} have the same label on every item" if pairs else ""


# -- the summary ----------------------------------------------------------------------------------

def _shown(formula: str) -> str:
    return formula.replace("documented", "subset").replace("C(model)", "model")


def _summary(result: Any, shown: str, interaction: bool, data: pd.DataFrame, labels: dict,
             covariance: str) -> dict[str, Any]:
    ci = result.conf_int()
    names = [n for n in result.params.index if n != "Intercept"]
    terms = [{"term": _term_name(name, labels),
              "odds_ratio": nan_if_infinite(np.exp(result.params[name])),
              "ci_low": nan_if_infinite(np.exp(ci.loc[name, 0])),
              "ci_high": nan_if_infinite(np.exp(ci.loc[name, 1])),
              "p": nan_if_infinite(result.pvalues[name])} for name in names]
    subset = terms[names.index("documented")]
    summary = {"formula": shown, "interaction": interaction, "models": len(labels),
               "reference_model": labels["m0"], "covariance": covariance,
               "cluster_correction": CLUSTER_CORRECTION if covariance == "item-clustered" else None,
               "n": int(result.nobs), "items": int(data["item"].nunique()), "terms": terms,
               **{f"documented_{k}": subset[k] for k in ("odds_ratio", "ci_low", "ci_high", "p")},
               "interaction_wald_statistic": None, "interaction_wald_df": None, "interaction_wald_p": None}
    if interaction:
        summary.update(_interaction_test(result))
    return summary


def _term_name(name: str, labels: dict) -> str:
    """``documented:C(model)[T.m2]`` -> ``documented × model <label of m2>``; only a real
    interaction column gets the ×, whatever the label holds."""
    if name == "documented":
        return "documented subset (vs undocumented)"
    model = f"model {labels[_LEVEL.search(name).group(1)]}"
    return f"documented × {model}" if _is_interaction(name) else model


def _is_interaction(name: str) -> bool:
    """The column names hold codes, never labels, so the term's prefix is unambiguous."""
    return name.startswith(f"{_INTERACTION_TERM}[")


def _interaction_test(result: Any) -> dict[str, Any]:
    """Joint Wald test (the fit's covariance) that every interaction coefficient is zero."""
    rows = [i for i, name in enumerate(result.params.index) if _is_interaction(name)]
    if not rows:
        return {}
    restriction = np.eye(len(result.params))[rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        test = result.wald_test(restriction, scalar=True)
    return {"interaction_wald_statistic": nan_if_infinite(test.statistic),
            "interaction_wald_df": len(rows), "interaction_wald_p": nan_if_infinite(test.pvalue)}
