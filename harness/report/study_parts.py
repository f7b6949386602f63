"""The report's study parts, built only where the study's settings ask for them, so that a report
without them (the paper's) is unchanged: ``exposure`` for ``[study] exposure``
(:mod:`harness.report.exposure`), ``cutoff`` for ``[study] released`` with the models' cut-offs
(:mod:`harness.report.cutoff`), ``tiers`` for ``[study] subsets`` (:mod:`harness.report.tiers`),
and ``study`` saying which settings were used and where they came from.

Everything is parsed before anything is written: a bad value raises UserError here, inside
``build_report``, and ``contam report`` writes no file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.report import cutoff, exposure, tiers
from harness.report.cells import Cells
from harness.report.item_fields import item_fields
from harness.report.study_inputs import StudyInputs

if TYPE_CHECKING:
    from harness.store.access import Reader

__all__ = ["build"]


def build(store: Reader, cells: Cells, report: dict[str, Any], inputs: StudyInputs, notes: list) -> dict[str, Any]:
    """The study parts the settings ask for (none: an empty dict)."""
    settings = inputs.settings
    if not (settings.exposure or settings.released or settings.subsets):
        return {}
    frame, items = cells.frame(), item_fields(store)
    order = _model_order(report, frame)
    parts: dict[str, Any] = {"study": {"settings_from": inputs.source, "exposure": settings.exposure,
                                       "released": settings.released, "subsets": list(settings.subsets),
                                       "cutoffs": {m: d.isoformat() for m, d in inputs.cutoffs.items()}}}
    if settings.exposure:
        parts["exposure"] = exposure.exposure(frame, items, settings.exposure, order, notes,
                                              cells.outcome)
    if settings.released:
        parts["cutoff"] = cutoff.cutoff(frame, items, settings.released, inputs.cutoffs, order, notes,
                                        cells.outcome)
    if settings.subsets:
        tiers.require_tiers(sorted(map(str, frame["subset"].dropna().unique())), settings.subsets)
        parts["tiers"] = tiers.tiers(frame, settings.subsets, order, cells.outcome)
    return parts


def _model_order(report: dict[str, Any], frame: Any) -> list[str]:
    """The report's model order (human accuracy), then any other model by name."""
    ranked = [r["model"] for r in report.get("overall") or []]
    return ranked + sorted(set(frame["model"]) - set(ranked))
