"""Which (item, model) cells were answered correctly, for the study sections (exposure, cut-off,
tiers): the human rater's label where there is one, else the judge's, with the report's missing-
data rule (an empty answer, or an item never answered, is wrong). "Correct" is strict: a
partially right answer is not. Each cell says where its label came from, so a section can state
how many cells each source gave. See ARCHITECTURE.md, "The report".
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["SOURCES", "correct_cells", "source_counts", "source_sentence"]

# Where a cell's label came from, in the order a section states them.
SOURCES = ("human", "judge", "unanswered")


def correct_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """The cells (:meth:`harness.report.cells.Cells.frame`) that have a label, with ``correct``
    (0/1) and ``source`` (one of :data:`SOURCES`); an answered cell with neither label is left out."""
    unanswered = frame["empty"].astype(bool) | ~frame["has_answer"].astype(bool)
    source = np.select([frame["human_raw"].notna(), unanswered, frame["judge_raw"].notna()],
                       ["human", "unanswered", "judge"], default="")
    label = frame["human"].where(frame["human"].notna(), frame["judge"])
    cells = frame.assign(source=source, correct=(label == "right").astype(int))
    return cells[cells["source"] != ""].reset_index(drop=True)


def source_counts(cells: pd.DataFrame, frame: pd.DataFrame | None = None) -> dict[str, int]:
    """How many cells each source gave; with ``frame`` (the cells before :func:`correct_cells`
    dropped any), also how many answered cells had no label at all (``unlabelled``)."""
    counts = {name: int((cells["source"] == name).sum()) for name in SOURCES}
    if frame is not None:
        counts["unlabelled"] = len(frame) - len(correct_cells(frame))
    return counts


def source_sentence(counts: dict[str, Any]) -> str:
    """``Correct: the human label (40 cells), else the judge's (20), ...`` in one line."""
    parts = [f"the human rater's label where there is one ({counts.get('human', 0)} cells), else the "
             f"judge's ({counts.get('judge', 0)} cells)"]
    if counts.get("unanswered"):
        parts.append(f"{counts['unanswered']} empty or unanswered cells count as wrong")
    if counts.get("unlabelled"):
        parts.append(f"{counts['unlabelled']} answered cells with neither label are left out")
    return "Correct means strictly right (a partially right answer is not): " + "; ".join(parts) + "."
