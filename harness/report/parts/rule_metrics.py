"""The report's parts for a study of one's own: accuracy under each rule-based metric
(``exact``, ``contains``, ``numeric``, ``regex``) beside the human and judge accuracy, each rule
metric's agreement with the human labels (rows of ``metric_validity``, built with the surface
metrics' own), and accuracy broken down
by an item column (``contam report --by COLUMN``). Rendered by
:mod:`contam.harness.report.texts.rule_metrics`. See ARCHITECTURE.md, "The report".

Counting follows the report's lower-bound rule: an empty answer or an unanswered item is wrong
under every regime; a non-empty answer without a value (not scorable, or not scored yet) is left
out of that metric's accuracy and counted in ``not_scored``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from contam.harness.config_schema import did_you_mean
from contam.harness.declare import flag_of
from contam.harness.jobs.options.report import ReportOptions
from contam.harness.errors import UserError
from contam.harness.report.parts import labels
from contam.harness.report.statistics import named_tests as stats
from contam.harness.report.inputs.cells import Cells
from contam.harness.report.parts.surface import _validity
from contam.harness.store import Store
from contam.metrics.metric_registry import metric_labels, rule_metrics

__all__ = ["RULE_METRICS", "CORE_COLUMNS", "RuleCells", "rule_cells", "build", "validity", "regimes",
           "item_columns"]

# both from the registry as it is now (a label table built earlier may predate a metric added since)
RULE_METRICS = {metric: metric_labels()[metric] for metric in rule_metrics()}
CORE_COLUMNS = ("item_id", "title", "subset", "question", "reference")


@dataclass(frozen=True)
class RuleCells:
    """The labelled cells with each rule metric's value (and the ``--by`` column), and the rule
    metrics some cell has a value of."""

    frame: pd.DataFrame
    present: list[str]


def rule_cells(store: Store, cells: Cells, by: str | None) -> RuleCells:
    """The cells this module counts over; a ``--by`` naming no item column is refused here."""
    frame = _frame(store, cells, by)
    return RuleCells(frame, [m for m in RULE_METRICS if m in frame and frame[m].notna().any()])


def build(rules: RuleCells, by: str | None, regimes: list[str], order: list[str]) -> dict[str, Any]:
    """The new report keys, each only where it has data (so a paper-style report is unchanged):
    ``rule_metrics``, ``rule_accuracy``, ``by``; ``regimes``: :func:`regimes`; ``order``: the
    models in human-accuracy order (empty without it)."""
    models = _models(order, rules.frame)
    built = {"rule_metrics": rules.present,
             "rule_accuracy": _rule_accuracy(rules.frame, rules.present, models),
             "by": _by_column(rules.frame, by, regimes, models) if by else None}
    return {key: value for key, value in built.items() if value}


def validity(rules: RuleCells, contrast: tuple, order: list[str]) -> dict[str, Any]:
    """Each present rule metric's rows of ``metric_validity`` (beside the surface metrics')."""
    return _rule_validity(rules.frame, rules.present, contrast, _models(order, rules.frame))


def _models(order: list[str], frame: pd.DataFrame) -> list[str]:
    """Models in human-accuracy order where there is one, else by name."""
    return order or sorted(frame["model"].unique())


def regimes(outcome: str | None, human: str | None, judge: str | None, rules: RuleCells) -> list[str]:
    """What a right answer means in each column: the study's outcome where it is a metric, the
    human's label, the judge's, each rule metric."""
    return [*(["outcome"] if outcome else []), *(["human"] if human else []),
            *(["judge"] if judge else []), *rules.present]


# -- the cells with their rule values and the --by column ---------------------------------------

def _frame(store: Store, cells: Cells, by: str | None) -> pd.DataFrame:
    frame = cells.labelled().frame()  # each rule metric's values among its columns
    if not cells.outcome.labels:  # the outcome's call, beside the labels
        calls = cells.frame()[["item_seq", "model", "human"]].rename(columns={"human": "outcome"})
        frame = frame.merge(calls, on=["item_seq", "model"], how="left")
    if by:
        frame = frame.merge(_column_values(store, by), on="item_seq", how="left")
    return frame


def item_columns(store: Store) -> list[str]:
    """The columns ``--by`` accepts: the core ones, then every key of the items' fields."""
    keys = store.query("SELECT DISTINCT unnest(json_keys(extra)) AS k FROM latest_items "
                       "WHERE extra IS NOT NULL ORDER BY k")
    return [*CORE_COLUMNS, *(k for (k,) in keys if k not in CORE_COLUMNS)]


def _column_values(store: Store, column: str) -> pd.DataFrame:
    known = item_columns(store)
    if column not in known:
        raise UserError(f"{flag_of(ReportOptions, 'by')} {column!r}: no such item column{did_you_mean(column, known)} "
                        f"(columns present: {', '.join(known)})")
    value = column if column in CORE_COLUMNS else "json_extract_string(extra, ?)"
    params = [] if column in CORE_COLUMNS else [f'$."{column}"']
    return store.query_df(f"SELECT seq AS item_seq, {value} AS by_value FROM latest_items", params)


# -- accuracy -----------------------------------------------------------------------------------

def _right_counts(cells: pd.DataFrame, regime: str) -> tuple[int, int, int]:
    """(right, counted, left out) under ``regime`` (a rater column or a rule metric)."""
    if regime in ("outcome", "human", "judge"):
        counted = cells[regime].notna()
        return int((cells[regime] == "right").sum()), int(counted.sum()), int((~counted).sum())
    lost = (cells["empty"] | ~cells["has_answer"]) & cells[regime].isna()  # wrong: lower bound
    counted = cells[regime].notna() | lost
    return int((cells[regime] == 1.0).sum()), int(counted.sum()), int((~counted).sum())


def _accuracy(cells: pd.DataFrame, regime: str) -> dict[str, Any]:
    right, n, left_out = _right_counts(cells, regime)
    low, high = stats.wilson_interval(right, n)
    return {"n": n, "right": right, "accuracy": stats.proportion(right, n), "ci_low": low,
            "ci_high": high, "not_scored": left_out}


def _rule_accuracy(frame: pd.DataFrame, present: list[str], models: list[str]) -> list[dict]:
    """One row per model and rule metric."""
    return [{"model": model, "metric": metric, **_accuracy(frame[frame["model"] == model], metric)}
            for model in models for metric in present]


def _by_column(frame: pd.DataFrame, column: str, regimes: list[str],
               models: list[str]) -> dict[str, Any]:
    """Accuracy per value of ``column``, per model and regime (values in first-item order)."""
    values = frame.sort_values("item_seq")["by_value"].drop_duplicates().tolist()
    rows = []
    for value in values:
        missing = pd.isna(value)
        group = frame[frame["by_value"].isna() if missing else frame["by_value"] == value]
        rows += [{"value": None if missing else value, "model": model, "regime": regime,
                  "items": int(group["item_seq"].nunique()),
                  **_accuracy(group[group["model"] == model], regime)}
                 for model in models for regime in regimes]
    return {"column": column, "regimes": regimes, "rows": rows}


# -- agreement with the human labels ------------------------------------------------------------

def _rule_validity(frame: pd.DataFrame, present: list[str], contrast: tuple,
                   models: list[str]) -> dict[str, Any]:
    """Each rule metric as a classifier of the human 'right' label: metric validity's columns
    plus the agreement, Cohen's κ, sensitivity and specificity of the two right/not-right calls."""
    labelled = frame[frame["human"].notna()]
    result: dict[str, Any] = {}
    for metric in present:
        scored = labelled[labelled[metric].notna()]
        result[metric] = None if scored.empty else {
            "pooled": _validity_row(scored, metric, contrast),
            "per_model": [{"model": m, **_validity_row(scored[scored["model"] == m], metric, contrast)}
                          for m in models if (scored["model"] == m).any()]}
    return result


def _validity_row(cells: pd.DataFrame, metric: str, contrast: tuple) -> dict[str, Any]:
    return {**_validity(cells, metric, contrast), **_agreement(cells, metric)}


def _agreement(cells: pd.DataFrame, metric: str) -> dict[str, Any]:
    human = (cells["human"] == "right").to_numpy()
    rule = (cells[metric] == 1.0).to_numpy()
    confusion = [[int((human & rule).sum()), int((human & ~rule).sum())],
                 [int((~human & rule).sum()), int((~human & ~rule).sum())]]
    return {"agreement": stats.exact_agreement(confusion), "kappa": stats.cohen_kappa(confusion),
            "sensitivity": _share(rule[human]), "specificity": _share(~rule[~human]),
            "confusion": confusion}


def _share(flags: np.ndarray) -> float:
    return float(flags.mean()) if len(flags) else float("nan")

