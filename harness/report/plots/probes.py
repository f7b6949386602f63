"""The probes' figures: each registered probe's (``ProbeSpec.figures``), drawn only where its part
has data, in the report's style. ``contam.harness.jobs.report`` writes them beside
``contam.harness.report.plots.paper``' own; the captions go under them in report.md and report.html
(``contam.harness.report.texts.markdown``)."""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from contam.harness.report.model import Report
from contam.harness.report.plots.paper import export_drawn
from contam.metrics.probe_registry import PROBES, ProbeFigure, resolve

__all__ = ["caption", "draw", "export"]


def _figures() -> dict[str, tuple[str, ProbeFigure]]:
    """Every probe figure by name: (its probe, the figure)."""
    return {figure.name: (kind, figure) for kind, spec in PROBES.items() for figure in spec.figures}


def caption(name: str) -> str | None:
    entry = _figures().get(name)
    return resolve(entry[1].caption) if entry else None


def draw(report: Report) -> dict[str, Figure]:
    """Each figure whose probe has data; call it inside ``plt.rc_context(STYLE)`` (:func:`export`)."""
    probes = report.probes or {}
    return {name: resolve(figure.draw)(report) for name, (kind, figure) in _figures().items()
            if kind in probes}


def export(report: Report, out: Path | None = None) -> dict[str, bytes]:
    """The probes' figures as PNG bytes; with ``out``, also saved as PNG and PDF."""
    return export_drawn(lambda: draw(report), out)
