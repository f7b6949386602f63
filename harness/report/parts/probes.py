"""The report's probes section: one part per registered probe (``contam.metrics.probe_registry.PROBES``),
each built and rendered by the functions its spec names (``part``, ``section``).

A part reads the store into ``report.probes[KIND]`` and renders that as one :class:`Section`;
its figures are drawn by :mod:`contam.harness.report.plots.probes` (which imports matplotlib, so this
module stays free of it). A part without data is left out, and ``notes`` says so; a store without
any probe score has ``report.probes = None`` and one note. ``contam.harness.report.analysis`` calls
:func:`build` and ``contam.harness.report.texts.markdown`` :func:`sections`.
"""

from __future__ import annotations

from contam.harness.report.model import Report
from contam.harness.report.statistics import holm as probe_holm
from contam.harness.report.texts.format import Section
from contam.harness.store import Store
from contam.metrics.probe_registry import PROBES, resolve

__all__ = ["build", "sections"]


def build(store: Store, contrast: tuple[str, str], notes: list[dict[str, str]]) -> dict | None:
    """``report.probes``: each part that has data, by probe kind; None when none has."""
    built = {kind: resolve(spec.part)(store, contrast) for kind, spec in PROBES.items()}
    present = {kind: part for kind, part in built.items() if part is not None}
    if not present:
        notes.append({"section": "probes", "reason": "no probe scores in the store "
                      "(`contam probe KIND CONFIG` adds them)"})
        return None
    notes += [{"section": f"probes.{kind}", "reason": f"no {kind} scores in the store"}
              for kind in built if kind not in present]
    probe_holm.adjust(present)
    return present


def sections(report: Report) -> list[Section]:
    probes = report.probes or {}
    built = [resolve(spec.section)(probes[kind], report)
             for kind, spec in PROBES.items() if kind in probes]
    if built:
        built[0].paragraphs.append(probe_holm.family_sentence(probes))
    return built
