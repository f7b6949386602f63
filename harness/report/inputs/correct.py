"""Which (item, model) cells were answered correctly, for the study sections (exposure, cut-off,
tiers), under the study's outcome (:mod:`contam.metrics.outcome`). With labels: the human rater's label
where there is one, else the judge's; with a metric: its right/wrong call, which
:class:`contam.harness.report.inputs.cells.Cells` puts in the cells' ``human`` column (the one place that turns
a value into right or wrong). Either way the report's missing-data rule holds (an empty answer,
or an item never answered, is wrong), and "correct" is strict: a partially right answer is not.
Each cell says where its call came from, so a section can state how many cells each source gave.
See ARCHITECTURE.md, "The report".
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from contam.harness.report.model import OMITTED, Report
from contam.metrics.outcome import Outcome

__all__ = ["SOURCES", "METRIC_SOURCES", "correct_cells", "source_counts", "source_sentence",
           "names_outcome", "metric_outcome", "correct_heading"]

# Where a cell's call came from, in the order a section states them: under labels, and under a metric.
SOURCES = ("human", "judge", "unanswered")
METRIC_SOURCES = ("scored", "unanswered")


def correct_cells(frame: pd.DataFrame, outcome: Outcome | None = None) -> pd.DataFrame:
    """The cells (:meth:`contam.harness.report.inputs.cells.Cells.frame`) that have a call, with ``correct``
    (0/1) and ``source`` (one of :data:`SOURCES`, or :data:`METRIC_SOURCES` under a metric); an
    answered cell without one (no label; not scored) is left out. Under a metric the judge never
    stands in."""
    unanswered = frame["empty"].astype(bool) | ~frame["has_answer"].astype(bool)
    by_metric = outcome is not None and not outcome.labels
    judged = frame["judge_raw"].notna() & (not by_metric)
    source = np.select([frame["human_raw"].notna(), unanswered, judged],
                       ["scored" if by_metric else "human", "unanswered", "judge"], default="")
    # compared one column at a time: the two are categoricals whose categories may differ
    right = np.where(frame["human"].notna(), frame["human"] == "right", frame["judge"] == "right")
    cells = frame.assign(source=source, correct=right.astype(int))
    return cells[cells["source"] != ""].reset_index(drop=True)


def source_counts(cells: pd.DataFrame, frame: pd.DataFrame | None = None,
                  outcome: Outcome | None = None) -> dict[str, Any]:
    """How many cells each source gave; with ``frame`` (the cells before :func:`correct_cells`
    dropped any), also how many answered cells had no call at all (``unlabelled``). Under a
    metric, ``outcome`` names it ("contains", "bleu2 >= 0.5")."""
    by_metric = outcome is not None and not outcome.labels
    counts: dict[str, Any] = {"outcome": str(outcome)} if by_metric else {}
    counts |= {name: int((cells["source"] == name).sum())
               for name in (METRIC_SOURCES if by_metric else SOURCES)}
    if frame is not None:
        counts["unlabelled"] = len(frame) - len(correct_cells(frame, outcome))
    return counts


def source_sentence(counts: dict[str, Any]) -> str:
    """``Correct: the human label (40 cells), else the judge's (20), ...`` in one line."""
    if "outcome" in counts:
        return _metric_sentence(counts)
    parts = [f"the human rater's label where there is one ({counts.get('human', 0)} cells), else the "
             f"judge's ({counts.get('judge', 0)} cells)"]
    if counts.get("unanswered"):
        parts.append(f"{counts['unanswered']} empty or unanswered cells count as wrong")
    if counts.get("unlabelled"):
        parts.append(f"{counts['unlabelled']} answered cells with neither label are left out")
    return "Correct means strictly right (a partially right answer is not): " + "; ".join(parts) + "."


def _metric_sentence(counts: dict[str, Any]) -> str:
    """``Correct = contains (240 scored cells); ...``: a metric's call, right or not."""
    parts = [f"{counts['scored']} scored cells"]
    if counts.get("unanswered"):
        parts.append(f"{counts['unanswered']} empty or unanswered cells count as wrong")
    if counts.get("unlabelled"):
        parts.append(f"{counts['unlabelled']} answered cells not scored are left out")
    return f"Correct = {counts['outcome']}, right or not (no partial credit): " + "; ".join(parts) + "."


def names_outcome(report: Report) -> bool:
    """Whether the report names its outcome: any but labels (the paper's report is unchanged)."""
    return report.outcome is not OMITTED


def metric_outcome(report: Report) -> str | None:
    """The outcome a report counts by when it is a metric (``contains``, ``bleu2 >= 0.5``); None
    under labels, or with no outcome at all."""
    return report.outcome or None  # OMITTED under labels


def correct_heading(report: Report, labels: str = "Human") -> str:
    """What says an answer is right, as a column or axis names it: ``labels`` under labels, else
    ``correct = contains`` (with no outcome at all, ``correct = none``, the labels' name too)."""
    outcome = metric_outcome(report)
    return f"correct = {outcome}" if outcome else labels
