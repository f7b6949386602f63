"""The report's probes section: one part per contamination probe, each in a module of its own
(``probe_cdd.py`` ...), listed once in :data:`PARTS`.

A part reads the store into ``report["probes"][KIND]`` (``build``) and renders that as one
:class:`Section` (``section``); its figures are listed in :mod:`harness.report.probe_figures`
(which imports matplotlib and ``harness.report.figures``, so this module stays free of both). A
part without data is left out, and ``notes`` says so; a store without any probe score has
``report["probes"] = None`` and one note. ``harness.report.analysis`` calls :func:`build` and
``harness.report.render`` :func:`sections`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.report import probe_cdd, probe_guided, probe_holm, probe_mink, probe_tsguess
from harness.report.format import Section
from harness.store import Store

__all__ = ["ProbePart", "PARTS", "build", "sections"]


@dataclass(frozen=True)
class ProbePart:
    kind: str
    build: Callable[[Store, tuple[str, str]], dict[str, Any] | None]
    section: Callable[[dict[str, Any], dict[str, Any]], Section]


PARTS: list[ProbePart] = [
    ProbePart(probe_cdd.KIND, probe_cdd.build, probe_cdd.section),
    ProbePart(probe_tsguess.KIND, probe_tsguess.build, probe_tsguess.section),
    ProbePart(probe_guided.KIND, probe_guided.build, probe_guided.section),
    ProbePart(probe_mink.KIND, probe_mink.build, probe_mink.section),
]


def build(store: Store, contrast: tuple[str, str], notes: list[dict[str, str]]) -> dict | None:
    """``report["probes"]``: each part that has data, by probe kind; None when none has."""
    built = {part.kind: part.build(store, contrast) for part in PARTS}
    present = {kind: part for kind, part in built.items() if part is not None}
    if not present:
        notes.append({"section": "probes", "reason": "no probe scores in the store "
                      "(`contam probe KIND CONFIG` adds them)"})
        return None
    notes += [{"section": f"probes.{kind}", "reason": f"no {kind} scores in the store"}
              for kind in built if kind not in present]
    probe_holm.adjust(present)
    return present


def sections(report: dict) -> list[Section]:
    probes = report.get("probes") or {}
    built = [part.section(probes[part.kind], report) for part in PARTS if part.kind in probes]
    if built:
        built[0].paragraphs.append(probe_holm.SENTENCE)
    return built
