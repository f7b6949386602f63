"""The report's study parts, built only where the study's settings ask for them, so that a report
without them (the paper's) is unchanged: ``exposure`` for ``[study] exposure``
(:mod:`contam.harness.report.parts.exposure`), ``cutoff`` for ``[study] released`` with the models' cut-offs
(:mod:`contam.harness.report.parts.cutoff`), ``tiers`` for ``[study] subsets`` (:mod:`contam.harness.report.parts.tiers`),
and ``study`` saying which settings were used and where they came from. A part the settings ask
for but the store cannot give is left out and named, with what would add it, in the report's
"Not in this report" list (:mod:`contam.harness.report.parts.absent`).

Everything is parsed before anything is written: a bad value raises UserError here, inside
``build_report``, and ``contam report`` writes no file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from contam.harness.report.parts import cutoff
from contam.harness.report.parts import exposure
from contam.harness.report.parts import tiers
from contam.harness.report.parts.absent import absent
from contam.harness.report.inputs.cells import Cells
from contam.harness.report.inputs.item_fields import item_fields
from contam.harness.report.inputs.study_settings import StudyInputs
from contam.harness.report.model import Section, noted

if TYPE_CHECKING:
    from contam.harness.store.access import Reader
    from contam.metrics.outcome import Outcome

__all__ = ["build", "EXPOSURE", "CUTOFF", "TIERS"]

EXPOSURE, CUTOFF, TIERS = "Exposure", "Before and after the training cut-off", "Accuracy across ordered tiers"
NO_OUTCOME = ("no cell has a right or wrong answer under the study's outcome; labels (`contam import labels "
              "FILE`, `contam judge CONFIG`) or `[study] correct` naming a scored rule metric add them")


def build(store: Reader, cells: Cells, order: list[str],
          inputs: StudyInputs) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """The study parts the settings ask for (each a :class:`Section` with its notes; one the store
    cannot give has no value) and the rows of "Not in this report" for those it cannot (none asked
    for: two empty results); ``order``: the models in human-accuracy order."""
    settings = inputs.settings
    if not (settings.exposure or settings.released or settings.subsets):
        return {}, []
    frame, items = cells.frame(), item_fields(store)
    order = order + sorted(set(frame["model"]) - set(order))  # then any other model by name
    parts: dict[str, Any] = {"study": {"settings_from": inputs.source, "exposure": settings.exposure,
                                       "released": settings.released, "subsets": list(settings.subsets),
                                       "cutoffs": {m: d.isoformat() for m, d in inputs.cutoffs.items()}}}
    built, outcome = [], cells.outcome
    if settings.exposure:
        built.append(("exposure", *_exposure(frame, items, settings.exposure, order, outcome)))
    if settings.released:
        built.append(("cutoff", *_cutoff(frame, items, settings.released, inputs, order, outcome)))
    if settings.subsets:
        built.append(("tiers", *_tiers(frame, settings.subsets, order, outcome)))
    parts.update({key: part for key, part, _ in built})
    return parts, [row for _, _, row in built if row]


def _exposure(frame: pd.DataFrame, items: pd.DataFrame, column: str, order: list[str],
              outcome: Outcome | None) -> tuple[Section, dict | None]:
    part = noted(lambda notes: exposure.exposure(frame, items, column, order, notes, outcome))
    if part.value is None:
        return part, absent(EXPOSURE, f"every item's `{column}` value is blank; values in that column add it")
    if part.value["per_model"]:
        return part, None
    return Section(None, part.notes), absent(EXPOSURE, NO_OUTCOME)  # its notes stay, as the cut-off's


def _cutoff(frame: pd.DataFrame, items: pd.DataFrame, column: str, inputs: StudyInputs, order: list[str],
            outcome: Outcome | None) -> tuple[Section, dict | None]:
    part = noted(lambda notes: cutoff.cutoff(frame, items, column, inputs.cutoffs, order, notes, outcome))
    if part.value["per_model"]:
        return part, None
    left_out = Section(None, part.notes)  # its notes stay: they say what the part would leave out
    if not set(inputs.cutoffs) & set(order):
        return left_out, absent(CUTOFF, "no model in the store has a cut-off; a `cutoff` for each `[[models]]` adds it")
    if part.value["items_without_date"] == len(items):
        return left_out, absent(CUTOFF, f"every item's `{column}` date is blank; dates in that column add it")
    return left_out, absent(CUTOFF, NO_OUTCOME)


def _tiers(frame: pd.DataFrame, subsets: tuple[str, ...], order: list[str], outcome: Outcome | None):
    tiers.require_tiers(sorted(map(str, frame["subset"].dropna().unique())), subsets)
    if len(subsets) < 2:
        return None, absent(TIERS, f"a trend needs two tiers or more; `[study] subsets` lists one ({subsets[0]})")
    part = tiers.tiers(frame, subsets, order, outcome)
    return (part, None) if part["per_tier"] and any(r["n"] for r in part["per_tier"]) else \
        (None, absent(TIERS, NO_OUTCOME))
