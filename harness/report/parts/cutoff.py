"""The cut-off section's numbers (``[study] released`` names an ISO-date item column, and each
model's ``[[models]] cutoff`` its training cut-off): per model, accuracy on the items released on
or before the cut-off (the model could have read about them) against those released after it,
the time-based design. Each side has its Wilson interval; the difference (before − after) its
Newcombe interval; Fisher's exact test and the odds ratio come from the report's one 2×2 helper
(:func:`contam.harness.report.inputs.cells.contrast_2x2`), Holm-adjusted across models like the gap table.

"Correct" is :mod:`contam.harness.report.inputs.correct`'s rule.
"""

from __future__ import annotations

import datetime
from typing import Any

import pandas as pd

from contam.harness.report.statistics import named_tests as stats
from contam.harness.report.inputs.cells import contrast_2x2, nan_if_none
from contam.harness.report.inputs.correct import correct_cells, source_counts
from contam.metrics.outcome import Outcome
from contam.harness.report.texts.format import plural
from contam.harness.report.inputs.item_fields import date_column

__all__ = ["cutoff", "KEY"]

KEY = "[study] released"
_SIDES = {"documented": "before", "undocumented": "after"}  # contrast_2x2's names -> this section's


def cutoff(frame: pd.DataFrame, items: pd.DataFrame, column: str, cutoffs: dict[str, datetime.date],
           order: list[str], notes: list, outcome: Outcome | None = None) -> dict[str, Any]:
    """The section's numbers; raises UserError on a date that does not parse."""
    released = date_column(items, column, KEY)
    known = frame[frame["item_seq"].map(released).notna()]
    data = correct_cells(known, outcome)
    data = data.assign(released=data["item_seq"].map(released))
    _note_left_out(released, column, order, cutoffs, set(data["model"]), notes)
    rows = [_model_row(m, cutoffs[m], data[data["model"] == m]) for m in order
            if m in cutoffs and m in set(data["model"])]
    _add_holm(rows)
    return {"column": column, "correct": source_counts(data, known, outcome),
            "items": int(data["item_seq"].nunique()), "items_without_date": int(released.isna().sum()),
            "per_model": rows}


def _model_row(model: str, cut: datetime.date, cells: pd.DataFrame) -> dict[str, Any]:
    before = cells[cells["released"].map(lambda d: d <= cut)]
    after = cells[cells["released"].map(lambda d: d > cut)]
    row = contrast_2x2(int(before["correct"].sum()), len(before), int(after["correct"].sum()), len(after),
                       count="right", share="accuracy", difference="difference", interval="difference_ci")
    return {"model": model, "cutoff": cut.isoformat(), **{_renamed(k): v for k, v in row.items()}}


def _renamed(key: str) -> str:
    side, _, rest = key.partition("_")
    return f"{_SIDES[side]}_{rest}" if side in _SIDES else key


def _add_holm(rows: list[dict[str, Any]]) -> None:
    """Holm over the models with items on both sides; a model with an empty side has no p."""
    adjusted = stats.holm([nan_if_none(r["fisher_p"]) for r in rows])
    tested = sum(r["fisher_p"] is not None for r in rows)
    family = f"Fisher, one test per model with items on both sides ({plural(tested, 'test')})"
    for row, p in zip(rows, adjusted):
        row["fisher_p_holm"], row["holm_family"] = p, family


def _note_left_out(released: pd.Series, column: str, order: list[str], cutoffs: dict,
                   answered: set, notes: list) -> None:
    without = int(released.isna().sum())
    if without:
        notes.append({"section": "cutoff", "reason": f"{without} item(s) have no {column!r} date and are "
                      "left out of the cut-off contrast"})
    no_cutoff = [m for m in order if m in answered and m not in cutoffs]
    if no_cutoff:
        notes.append({"section": "cutoff", "reason": f"no [[models]] cutoff for {', '.join(no_cutoff)}: "
                      "left out of the cut-off contrast"})
