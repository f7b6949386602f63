"""The probes' figures, one entry per figure in :data:`FIGURES` (name -> the probe whose part it
draws, the drawing function, its caption), drawn only where that part has data, in the report's
style. ``harness.jobs.report`` writes them beside ``harness.report.figures``' own; the captions
go under them in report.md and report.html (``harness.report.render``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from matplotlib.figure import Figure

from harness.report import (
    probe_bars, probe_cdd, probe_cdd_figure, probe_guided, probe_mink, probe_mink_figure,
    probe_tsguess,
)
from harness.report.figures import export_drawn

__all__ = ["FIGURES", "caption", "draw", "export"]

FIGURES: dict[str, tuple[str, Callable[[dict], Figure], str]] = {
    probe_cdd.FIGURE: (probe_cdd.KIND, probe_cdd_figure.flagged_shares, probe_cdd_figure.CAPTION),
    probe_tsguess.FIGURE: (probe_tsguess.KIND, probe_bars.exact_match_rates,
                           probe_bars.TSGUESS_CAPTION),
    probe_guided.FIGURE: (probe_guided.KIND, probe_bars.guided_differences,
                          probe_bars.GUIDED_CAPTION),
    probe_mink.FIGURE: (probe_mink.KIND, probe_mink_figure.distributions, probe_mink_figure.CAPTION),
}


def caption(name: str) -> str | None:
    entry = FIGURES.get(name)
    return entry[2] if entry else None


def draw(report: dict) -> dict[str, Figure]:
    """Each figure whose probe has data; call it inside ``plt.rc_context(STYLE)`` (:func:`export`)."""
    probes = report.get("probes") or {}
    return {name: make(report) for name, (kind, make, _) in FIGURES.items() if kind in probes}


def export(report: dict, out: Path | None = None) -> dict[str, bytes]:
    """The probes' figures as PNG bytes; with ``out``, also saved as PNG and PDF."""
    return export_drawn(lambda: draw(report), out)
