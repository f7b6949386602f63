"""How every report figure looks, in one place: sizes, the rc style, the one colour map, and the
marks the figures share (error bars, value labels that keep clear of them, a visible mark for a
0 bar, axis limits that stay sane when every value is 0).

Colours: the Okabe–Ito colour-blind-safe palette (Okabe & Ito 2008). The two subsets always have
the first two colours (blue documented, orange undocumented); models have the rest, assigned once
per report in its model order (:func:`model_colours`), so a model has the same colour in every
figure, whatever order that figure sorts its models in. Panels of scoring regimes always come in
:data:`REGIME_ORDER`.
"""

from __future__ import annotations

import math
import textwrap
from itertools import cycle
from typing import Any

from contam.harness.report.model import Report
from contam.harness.report.texts.format import PNG_DPI, is_missing

__all__ = ["COLUMN", "FULL", "STYLE", "BAR", "OKABE_ITO", "SUBSET_COLOURS", "MODEL_PALETTE", "NEUTRAL",
           "REGIME_ORDER", "model_colours", "row_value", "errors", "fit", "grid", "empty_panel",
           "value_labels", "zero_marks", "score_limits"]

COLUMN, FULL = 3.5, 7.2  # inches: one column and the full text width of a two-column paper
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
SUBSET_COLOURS = {"documented": OKABE_ITO[0], "undocumented": OKABE_ITO[1]}
# Models never take a subset's colour; yellow last (faint on white), grey before black.
MODEL_PALETTE = ("#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#999999", "#000000", "#F0E442")
NEUTRAL = "#555555"
REGIME_ORDER = ("human", "judge", "bleu2", "bertscore_f1")
STYLE = {
    "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5, "legend.fontsize": 7.5, "axes.spines.top": False, "axes.spines.right": False,
    "axes.linewidth": 0.6, "text.parse_math": False, "text.usetex": False,
    "pdf.fonttype": 42, "savefig.dpi": PNG_DPI,  # TrueType in the PDF: text a journal can edit
}
BAR = {"capsize": 2, "error_kw": {"elinewidth": 0.8, "ecolor": "black", "capthick": 0.8}}
_LABEL_GAP = 3  # points between an interval's end and its value label


def model_colours(report: Report) -> dict[str, str]:
    """Model -> colour, in the report's model order (human accuracy, else the judge's, else names)."""
    rows = report.overall or report.judge or report.regimes or []
    models = list(dict.fromkeys(r["model"] for r in rows))
    return dict(zip(models, cycle(MODEL_PALETTE)))


def row_value(row: dict | None, key: str, default: float = 0.0) -> float:
    """``row[key]``, or ``default`` where there is no row or the value is None or NaN."""
    return default if row is None or is_missing(row.get(key)) else row[key]


def errors(values: list[float], lows: list[float], highs: list[float]) -> list[list[float]]:
    """matplotlib wants distances below and above each value; undefined limits draw no bar."""
    below = [0.0 if is_missing(lo) else max(0.0, v - lo) for v, lo in zip(values, lows)]
    above = [0.0 if is_missing(hi) else max(0.0, hi - v) for v, hi in zip(values, highs)]
    return [below, above]


def fit(label: Any, width: int = 24, lines: int = 2) -> str:
    """At most ``lines`` lines of ``width`` characters, so that a long name cannot squeeze the plot
    away (nor run off the figure)."""
    wrapped = textwrap.wrap(str(label), width) or [""]
    return "\n".join(wrapped[:lines]) + ("…" if len(wrapped) > lines else "")


def grid(ax, axis: str) -> None:
    ax.grid(axis=axis, alpha=0.3, linewidth=0.5)
    ax.set_axisbelow(True)


def empty_panel(ax, title: str, reason: str) -> None:
    ax.set_title(title)
    ax.text(0.5, 0.5, reason, ha="center", va="center", wrap=True, color=NEUTRAL, transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def value_labels(ax, positions, values, highs, texts, *, horizontal: bool) -> None:
    """Each text just beyond the end of its bar's interval (or the bar, without one), offset in
    points so that it keeps clear of the error bar's cap at any axis scale."""
    for position, value, high, text in zip(positions, values, highs, texts):
        end = max(value, high) if not is_missing(high) else value
        if horizontal:
            ax.annotate(text, (end, position), xytext=(_LABEL_GAP, 0), textcoords="offset points",
                        va="center", ha="left")
        else:
            ax.annotate(text, (position, end), xytext=(0, _LABEL_GAP), textcoords="offset points",
                        ha="center", va="bottom", fontsize=7)


def zero_marks(ax, positions, values, colours, *, horizontal: bool, span: float = 0.6) -> None:
    """A bar of height 0 draws nothing: a short thick line on the baseline, in the bar's colour,
    says "0" rather than "missing"."""
    for position, value, colour in zip(positions, values, colours):
        if value == 0:
            across = [position - span / 2, position + span / 2]
            ax.plot([0, 0] if horizontal else across, across if horizontal else [0, 0], color=colour,
                    linewidth=2.5, solid_capstyle="butt", zorder=3, clip_on=False)


def score_limits(values, lows, highs, percent: bool) -> tuple[float, float]:
    """Axis limits with head room for the value labels: 0-100 (%) for accuracies; for score
    means, room for every bar and interval, and 0-1 when every value is 0 (a score's own range),
    never a range of 1e-9."""
    if percent:
        return 0.0, 125.0
    defined = [v for v in (*values, *lows, *highs) if not is_missing(v) and math.isfinite(v)]
    low, high = min([0.0, *defined]), max([0.0, *defined])
    if high - low <= 0:
        high = 1.0
    return (low * 1.15 if low < 0 else 0.0), high + 0.3 * (high - low)
