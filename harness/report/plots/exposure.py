"""The Exposure section's figure (``fig5_exposure``): each model's accuracy in the items' exposure
quintiles (points at the bin's mean exposure, 95% Wilson bars) and its fitted logistic curve over
the exposure range it covers. Drawn from ``report.exposure`` alone, in the report's style and
model colours (:mod:`contam.harness.report.plots.style`); written as PNG and PDF beside the others."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from contam.harness.report.model import Report
from contam.harness.report.parts.exposure import FIGURE
from contam.harness.report.plots.style import COLUMN, FULL, NEUTRAL, fit, grid, model_colours
from contam.harness.report.plots.paper import export_drawn
from contam.harness.report.texts.format import is_missing

__all__ = ["FIGURE", "CAPTION", "caption", "draw", "export", "accuracy_by_exposure"]

CAPTION = ("Figure 5. Accuracy in the items' exposure quintiles per model (points at each bin's mean "
           "exposure, 95% Wilson bars) and each model's fitted logistic curve correct ~ exposure.")
_DODGE = 0.012  # of the exposure range: side-by-side points of several models in one bin


def caption(name: str) -> str | None:
    return CAPTION if name == FIGURE else None


def draw(report: Report) -> dict[str, Figure]:
    part = report.exposure
    return {FIGURE: accuracy_by_exposure(report)} if part and part["quintiles"] else {}


def export(report: Report, out: Path | None = None) -> dict[str, bytes]:
    """The figure as PNG bytes (what the HTML embeds); with ``out``, also saved as PNG and PDF."""
    return export_drawn(lambda: draw(report), out)


def accuracy_by_exposure(report: Report) -> Figure:
    part = report.exposure
    models = list(dict.fromkeys(r["model"] for r in part["quintiles"]))
    colours = model_colours(report)
    fig = Figure(figsize=(COLUMN if len(models) <= 3 else FULL, 2.6), layout="constrained")
    ax = fig.subplots()
    span = _span(part)
    fits = {r["model"]: r for r in part["per_model"]}
    for i, model in enumerate(models):
        colour = colours.get(model, NEUTRAL)
        offset = (i - (len(models) - 1) / 2) * _DODGE * span
        _points(ax, [r for r in part["quintiles"] if r["model"] == model], offset, colour, model)
        _curve(ax, fits.get(model), colour)
    ax.set_xlabel(fit(f"exposure ({part['column']})", 40, lines=1))
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(-3, 103)
    grid(ax, "y")
    fig.legend(loc="outside upper center", ncols=min(len(models), 4), frameon=False)
    return fig


def _span(part: dict) -> float:
    edges = [r["exposure_low"] for r in part["quintiles"]] + [r["exposure_high"] for r in part["quintiles"]]
    return (max(edges) - min(edges)) or 1.0


def _points(ax, rows: list[dict], offset: float, colour: str, model: str) -> None:
    shown = [r for r in rows if r["n"]]
    x = [r["exposure_mean"] + offset for r in shown]
    y = [100 * r["accuracy"] for r in shown]
    below = [max(0.0, v - 100 * r["ci_low"]) for v, r in zip(y, shown)]
    above = [max(0.0, 100 * r["ci_high"] - v) for v, r in zip(y, shown)]
    ax.errorbar(x, y, yerr=[below, above], fmt="o", markersize=3.5, color=colour, ecolor=colour,
                elinewidth=0.8, capsize=2, label=fit(model))


def _curve(ax, row: dict | None, colour: str) -> None:
    """The fitted curve over the model's own exposure range; none where the fit is undefined."""
    if row is None or is_missing(row.get("slope")):
        return
    x = np.linspace(row["exposure_min"], row["exposure_max"], 100)
    ax.plot(x, 100 / (1 + np.exp(-(row["intercept"] + row["slope"] * x))), color=colour, linewidth=1.2)
