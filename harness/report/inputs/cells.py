"""What a report reads: the (item, model) cells with their effective labels, and the small numeric
helpers the label and surface analyses share.

The unit of analysis is the (item, model) cell over every item in the store and every model that
has an answer or a label. Missing data follows the seed paper's lower-bound rule: an empty answer,
or an item a model never answered, counts as wrong (and is counted in ``missing``); a non-empty
answer without a label from the chosen rater is left out of that rater's statistics (and counted).
A model the rater labelled nowhere is no part of that rater's statistics at all: its effective
label is NULL in every cell, imputed ones included, and the report names it as unlabelled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from contam.harness.config_schema import METRIC_DISPLAY
from contam.harness.labels import LABELS
from contam.harness.report.statistics import named_tests as stats
from contam.harness.store import Store
from contam.harness.store.cells import item_ranges
from contam.harness.store.frames import joined, query_frame
from contam.metrics.metric_registry import DEFAULT_METRICS, rule_metrics
from contam.metrics.outcome import Outcome

__all__ = ["LABELS", "METRICS", "Cells", "sort_value", "nan_if_none", "nan_if_infinite", "mean",
           "share", "ratio", "json_ratio", "plain", "subset_rank", "contrast_2x2"]

# The paper's surface metrics, the ones `contam score` computes by default.
METRICS = {metric: METRIC_DISPLAY[metric] for metric in DEFAULT_METRICS}

# One row per (item, model) of one range of item ids ({range}) with the effective human and judge
# labels ($human rater, $judge rater), and last each rule metric's value (NULL where unscored). An
# empty answer is wrong whatever its label says; an item with neither an answer nor a label is
# wrong too (unanswered); a non-empty answer without a label stays NULL (unlabelled). The range is
# filtered in every view's scan, before its window, so DuckDB's work is bounded by one range
# however many cells the store holds; a model the rater labelled nowhere (NULL throughout) is
# found over the whole frame afterwards (:func:`_unrated_models_cleared`). An item is keyed by
# its seq (``item_seq``): its id stays in the store. Both are 4-byte integers where they fit
# (answer_words is 0 where there is no answer: every reader counts the words of answered cells).
_CELLS_SQL = """
WITH grid AS (SELECT i.item_id, i.title, i.subset, i.seq::{seq_type} AS item_seq, m.model
              FROM (SELECT * FROM latest_items WHERE {range}) i
              CROSS JOIN (SELECT unnest($models) AS model) m),
raw AS (
    SELECT g.*, a.item_id IS NOT NULL AS has_answer,
           a.item_id IS NOT NULL AND coalesce(trim(a.answer), '') = '' AS empty,
           a.item_id IS NOT NULL AND coalesce(trim(a.answer), '') <> '' AS answered,
           coalesce(c.answer_words, 0)::INTEGER AS answer_words, coalesce(c.abstained, false) AS abstained, c.bleu2, c.bertscore_f1,{rule_values}
           coalesce(c.reference_empty, false) AS reference_empty,
           {human_raw} AS human_raw, j.label AS judge_raw
    FROM grid g
    LEFT JOIN (SELECT * FROM latest_answers WHERE {range}) a USING (item_id, model)
    LEFT JOIN (SELECT * FROM cells WHERE {range}) c USING (item_id, model)
    LEFT JOIN (SELECT item_id, model, label FROM latest_labels WHERE rater = $human AND {range}) h
        USING (item_id, model)
    LEFT JOIN (SELECT item_id, model, label FROM latest_labels WHERE rater = $judge AND {range}) j
        USING (item_id, model))
SELECT * EXCLUDE (item_id{rules}),
    CASE WHEN empty OR (NOT has_answer AND human_raw IS NULL) THEN 'wrong' ELSE human_raw END AS human,
    CASE WHEN empty OR (NOT has_answer AND judge_raw IS NULL) THEN 'wrong' ELSE judge_raw END AS judge
    {rules}
FROM raw
ORDER BY model, item_seq
"""

# The rule metrics the store has scores of: only their columns are read (a column of NULLs says
# nothing, and would weigh 8 bytes a cell).
_SCORED_SQL = "SELECT DISTINCT metric FROM scores"

# Every model with an answer or a label (the latest rows have the same keys as all rows, so the
# tables answer without the views' windows).
_MODELS_SQL = "SELECT model FROM answers UNION SELECT model FROM labels ORDER BY model"

_RANGE_CELLS = 100_000  # cells a range of the frame's read holds: DuckDB's work is bounded by it


# The frame's columns of few distinct values, held as pandas categoricals (a byte or two a row
# instead of a Python string each).
_CATEGORIES = ("title", "subset", "model", "human_raw", "judge_raw", "human", "judge")


class Cells:
    """The effective-label cells as a CTE, queried with GROUP BY for every count.

    ``outcome`` (:mod:`contam.metrics.outcome`) says what a right answer is. Under labels the ``human``
    column is the human rater's label; under a metric it is that metric's call, 'right' or
    'wrong' (NULL where it did not score), and every section that counts right answers reads it
    so: this is the one place a metric's value becomes right or wrong. ``judge`` stays the judge's."""

    def __init__(self, store: Store, human: str | None, judge: str | None,
                 outcome: Outcome | None = None) -> None:
        self.store, self.raters = store, (human, judge)
        self.outcome = outcome or Outcome()
        self.sql = _CELLS_SQL.replace("{human_raw}", _human_raw(self.outcome))
        self._frame: pd.DataFrame | None = None
        self._labelled: Cells | None = None

    def query(self, select: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """``select`` over the cells, the table ``c`` in it (``params``: its ``$1``, ``$2`` ...),
        worked on the frame (:meth:`frame`), not on the store: the joins that make the cells
        would otherwise be worked again, hundreds of MB a time at a million cells."""
        return query_frame(self._read(), select, params)

    def frame(self) -> pd.DataFrame:
        """One row per cell, read once per report (a million cells weigh): each caller gets a
        copy that shares the data until it changes it (pandas' copy-on-write)."""
        return self._read().copy(deep=False)

    def _read(self) -> pd.DataFrame:
        if self._frame is None:
            self._frame = _unrated_models_cleared(_in_model_order(self._ranges_read()))
        return self._frame

    def _ranges_read(self) -> pd.DataFrame:
        """The frame read a range of item ids at a time, each range's rows in (model, item) order."""
        models = [model for (model,) in self.store.query(_MODELS_SQL)]
        params = {"human": self.raters[0] or "", "judge": self.raters[1] or "", "models": models}
        ranges = item_ranges(self.store, max(1, _RANGE_CELLS // max(1, len(models))), "items")
        sql = _with_rules(self.sql, _scored_rules(self.store)).replace("{seq_type}", _seq_type(self.store))
        return joined((self.store.query_df(sql.replace("{range}", where), params | bounds,
                                           _CATEGORIES) for where, bounds in ranges), _CATEGORIES)

    def labelled(self) -> "Cells":
        """The same cells with the labels as the outcome: agreement, κ and metric validity
        compare with the labels whatever the outcome."""
        if self.outcome.labels:
            return self
        if self._labelled is None:
            self._labelled = Cells(self.store, *self.raters)
        return self._labelled


def _in_model_order(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (ranges of item ids, each in model and item order) in model and item order
    overall; as it is where the item ids sort as the items were imported."""
    keys = (frame["model"].cat.codes.to_numpy(), frame["item_seq"].to_numpy())
    if len(frame) < 2 or _ascending(*keys):
        return frame
    return frame.take(np.lexsort(keys[::-1])).reset_index(drop=True)


def _ascending(models: np.ndarray, seqs: np.ndarray) -> bool:
    """Whether the (model, seq) pairs are in ascending order."""
    model_step, seq_step = np.diff(models), np.diff(seqs)
    return bool(np.all((model_step > 0) | ((model_step == 0) & (seq_step > 0))))


def _unrated_models_cleared(frame: pd.DataFrame) -> pd.DataFrame:
    """``human`` and ``judge`` NULL throughout for a model the rater labelled nowhere: such a model
    is no part of that rater's statistics (an unlabelled model), not one with every blank wrong."""
    for rater, raw in (("human", "human_raw"), ("judge", "judge_raw")):
        rated = frame.groupby("model", observed=True)[raw].count()
        unrated = rated.index[rated == 0]
        if len(unrated):
            frame.loc[frame["model"].isin(unrated), rater] = np.nan
    return frame


def _scored_rules(store: Store) -> list[str]:
    scored = {metric for (metric,) in store.query(_SCORED_SQL)}
    return [metric for metric in rule_metrics() if metric in scored]


def _seq_type(store: Store) -> str:
    """INTEGER where every item's seq fits in one (4 bytes a cell instead of 8), else BIGINT."""
    largest = store.query("SELECT max(seq) FROM items")[0][0] or 0
    return "INTEGER" if largest < 2**31 else "BIGINT"


def _with_rules(sql: str, rules: list[str]) -> str:
    """The cells' SQL with a column for each of ``rules``, last (registry names: identifiers)."""
    return sql.replace("{rule_values}", "".join(f" c.{m}," for m in rules)).replace(
        "{rules}", "".join(f", {m}" for m in rules))


def _human_raw(outcome: Outcome) -> str:
    """The ``human_raw`` column: the human rater's label, or a metric's call on the cell."""
    if outcome.labels:
        return "h.label"
    return outcome.call_sql(f"c.{outcome.metric}")  # a registry name: an identifier


# -- small numeric helpers ----------------------------------------------------------------------

def sort_value(x: float | None) -> float:
    """A value to sort by: None and NaN rank below every number."""
    return -math.inf if x is None or (isinstance(x, float) and math.isnan(x)) else x


def nan_if_none(x: float | None) -> float:
    return math.nan if x is None else x


def nan_if_infinite(x: Any) -> float:
    """A statsmodels or numpy number as a float; an infinite one (a fit that did not converge, a
    zero denominator) as NaN."""
    value = float(x)
    return value if math.isfinite(value) else math.nan


def mean(values: np.ndarray) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def share(flags: np.ndarray) -> float:
    return float(np.mean(flags)) if len(flags) else math.nan


def ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


def json_ratio(x: float) -> float | str:
    """JSON has no infinity: an infinite odds ratio is the string "inf" (ARCHITECTURE.md, The report)."""
    return "inf" if math.isinf(x) else x


def subset_rank(subset: Any, contrast: Sequence[str]) -> int:
    """Where a subset sorts: 0 the documented one, 1 the undocumented one (``contrast``), 2 any
    other."""
    return contrast.index(subset) if subset in contrast else 2


def contrast_2x2(dk: int, dn: int, uk: int, un: int, *, count: str, share: str,
                 difference: str = "difference", interval: str = "ci") -> dict[str, Any]:
    """The documented-vs-undocumented 2×2 (``dk`` of ``dn`` documented items counted, ``uk`` of
    ``un`` undocumented): per side ``{side}_n``, ``{side}_{count}``, ``{side}_{share}`` and its
    Wilson interval ``{side}_ci_low`` / ``_high``; the ``difference`` of the shares with Newcombe's
    hybrid score interval ``{interval}_low`` / ``_high``; the odds ratio ad/bc (:func:`json_ratio`)
    and Fisher's two-sided exact p. The gap table, cdd's and ts-guess's contrasts are this row. A
    side without items leaves no table to test: the odds ratio and p are then None (not Fisher's
    p of 1), so the row stays out of any Holm family."""
    row: dict[str, Any] = {}
    for side, k, n in (("documented", dk, dn), ("undocumented", uk, un)):
        low, high = stats.wilson_interval(k, n)
        row |= {f"{side}_n": n, f"{side}_{count}": k, f"{side}_{share}": stats.proportion(k, n),
                f"{side}_ci_low": low, f"{side}_ci_high": high}
    low, high = stats.newcombe_interval(dk, dn, uk, un)
    row |= {difference: row[f"documented_{share}"] - row[f"undocumented_{share}"],
            f"{interval}_low": low, f"{interval}_high": high}
    if not (dn and un):
        return {**row, "odds_ratio": None, "fisher_p": None}
    fisher = stats.fisher_exact_2x2(dk, dn - dk, uk, un - uk)
    return {**row, "odds_ratio": json_ratio(fisher.odds_ratio), "fisher_p": fisher.p}


def plain(value: Any) -> Any:
    """numpy scalars -> Python numbers, so the rows compare and serialise like the SQL ones."""
    return value.item() if isinstance(value, np.generic) else value
