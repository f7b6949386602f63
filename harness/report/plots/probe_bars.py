"""The ts-guess and guided probes' figures, drawn from ``report.probes`` alone in the report's
style (:mod:`contam.harness.report.plots.paper`): per model, the documented and the undocumented subset side
by side with their 95% intervals.

* ts-guess: the exact-match rate of the masked word (Wilson intervals), Fisher's p above;
* guided: the mean difference guided − general of ROUGE-L and of BLEU-2 (BCa intervals), each
  bar's one-sided bootstrap p beside it.
"""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from contam.harness.report.model import Report
from contam.harness.report.plots.style import (BAR, COLUMN, FULL, SUBSET_COLOURS, errors, grid, row_value,
                                         zero_marks)
from contam.harness.report.texts.format import contrast_names, fmt_p, p_clause
from contam.harness.report.parts import probe_guided
from contam.harness.report.parts import probe_tsguess
from contam.harness.report.parts.probe_guided import MEASURE_NAMES, MEASURES

__all__ = ["exact_match_rates", "guided_differences", "share_bars", "TSGUESS_CAPTION",
           "GUIDED_CAPTION"]

TSGUESS_CAPTION = ("Probe ts-guess: share of masked words filled in exactly (Deng et al. 2023) on "
                   "the documented and the undocumented subset per model; bars are 95% Wilson "
                   "intervals, Fisher's exact p above.")
GUIDED_CAPTION = ("Probe guided: mean difference guided − general instruction (Golchin and Surdeanu "
                  "2023) of ROUGE-L and BLEU-2 against the question's true rest, on the documented "
                  "and the undocumented subset per model; bars are 95% BCa bootstrap intervals, "
                  "each with its one-sided bootstrap p.")
_SIDES = tuple((offset, side, SUBSET_COLOURS[side])
               for offset, side in ((-0.2, "documented"), (0.2, "undocumented")))


def _models_axis(ax, models: list[str]) -> list[int]:
    x = list(range(len(models)))
    tilt = len(models) > 2
    ax.set_xticks(x, models, rotation=20 if tilt else 0, ha="right" if tilt else "center")
    grid(ax, "y")
    return x


def _bars(ax, x: list[int], rows: list[dict | None], offset: float, color: str, label: str,
          scale: float, value: str) -> list[float]:
    """One subset's bars with their interval; returns the bar heights."""
    values = [scale * row_value(r, value) for r in rows]
    lows = [scale * row_value(r, "ci_low", math.nan) for r in rows]
    highs = [scale * row_value(r, "ci_high", math.nan) for r in rows]
    positions = [xi + offset for xi in x]
    ax.bar(positions, values, width=0.4, yerr=errors(values, lows, highs), color=color, label=label,
           **BAR)
    shown = [None if row is None else v for v, row in zip(values, rows)]  # no data: no "0" mark
    zero_marks(ax, positions, shown, [color] * len(values), horizontal=False, span=0.3)
    return values


def exact_match_rates(report: Report) -> Figure:
    part = report.probes[probe_tsguess.KIND]
    return share_bars(sorted({r["model"] for r in part["rates"]}),
                      {(r["model"], r["subset"]): r for r in part["rates"]},
                      {r["model"]: r["fisher_p"] for r in part["tests"]}, contrast_names(report),
                      value="rate", ylabel="masked words guessed (%)")


def share_bars(models: list[str], rows: dict[tuple[str, str], dict], fisher: dict[str, float],
               contrast: dict[str, str], *, value: str, ylabel: str) -> Figure:
    """Per model, a share (``rows[(model, subset)][value]``) of the documented and of the
    undocumented subset side by side, in %, with 95% Wilson bars and Fisher's p above."""
    fig = Figure(figsize=(COLUMN if len(models) <= 4 else FULL, 2.6), layout="constrained")
    ax = fig.subplots()
    x = _models_axis(ax, models)
    for offset, side, color in _SIDES:
        side_rows = [rows.get((model, contrast[side])) for model in models]
        _bars(ax, x, side_rows, offset, color, f"{contrast[side]} ({side})", 100, value)
    for xi, model in zip(x, models):
        ax.text(xi, 104, p_clause(fisher.get(model)), ha="center", fontsize=7)
    ax.set_ylim(0, 112)
    ax.set_yticks([0, 25, 50, 75, 100])
    ax.set_ylabel(ylabel)
    fig.legend(loc="outside upper center", ncols=2, frameon=False)
    return fig


def guided_differences(report: Report) -> Figure:
    part, contrast = report.probes[probe_guided.KIND], contrast_names(report)
    models = sorted({r["model"] for r in part["differences"]})
    by_key = {(r["model"], r["subset"], r["measure"]): r for r in part["differences"]}
    fig = Figure(figsize=(FULL, 2.8), layout="constrained")
    lows = [row_value(r, "ci_low", 0.0) for r in part["differences"]]
    for ax, measure in zip(fig.subplots(1, len(MEASURES), sharey=True), MEASURES):
        x = _models_axis(ax, models)
        for offset, side, color in _SIDES:
            rows = [by_key.get((model, contrast[side], measure)) for model in models]
            label = f"{contrast[side]} ({side})" if measure == MEASURES[0] else None
            values = _bars(ax, x, rows, offset, color, label, 1, "mean_difference")
            for xi, value, row in zip(x, values, rows):
                top = max(value, row_value(row, "ci_high", value))
                ax.text(xi + offset, top + 0.04, f"p {fmt_p(row_value(row, 'p', math.nan))}",
                        ha="center", fontsize=6, rotation=90, va="bottom")
        ax.axhline(0, color="black", linewidth=0.8)
        bottom = min(-0.25, min(lows, default=0.0) - 0.1)
        ax.set_ylim(bottom, 1.6)  # room for the p labels above 1
        ax.set_yticks([t / 4 for t in range(-4, 5) if t / 4 >= bottom])
        ax.set_title(MEASURE_NAMES[measure], fontsize=9)
    fig.axes[0].set_ylabel("mean guided − general")
    fig.legend(loc="outside upper center", ncols=2, frameon=False)
    return fig
