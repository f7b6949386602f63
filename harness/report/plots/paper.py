"""The report's figures, drawn from the report dict alone (matplotlib, Agg backend), sized for print.

fig1_leaderboard          strict human accuracy per model, best first, 95% Wilson bars
fig2_contamination_gap    documented vs undocumented accuracy per model, largest gap first
fig3_metric_disagreement  one panel per scoring regime the store has, models in human order
fig4_per_title            accuracy per title and model, titles grouped by subset, Wilson bars

Figures are drawn at the size they print (one column, 3.5 in, or the full width, 7.2 in) with
8-point text, in the colours of :mod:`contam.harness.report.plots.style` (one colour per subset and one
per model, the same in every figure), and carry no title: the caption in
report.md / report.html says what they show (``titles=True`` draws it in, for slides). Without
human labels, figures 1 and 2 show the best regime the store has
(:func:`contam.harness.report.analysis.figure_regime`) and their axis labels name it, so that neither is read
as human-labelled accuracy. Model names and titles are drawn as plain text: mathtext is off, so a
``$`` in a name is a dollar sign.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, never a window; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from contam.harness.report.model import Report
from contam.harness.report.parts.absent import has_regimes  # noqa: E402
from contam.harness.report.analysis import METRICS, figure_regime  # noqa: E402
from contam.harness.report.inputs.cells import subset_rank  # noqa: E402
from contam.harness.report.inputs.correct import correct_heading  # noqa: E402
from contam.harness.report.plots.style import (BAR, COLUMN, FULL, NEUTRAL, STYLE, SUBSET_COLOURS,  # noqa: E402
                                         empty_panel, errors, fit, grid, model_colours, row_value,
                                         score_limits, value_labels, zero_marks)
from contam.harness.report.texts.format import PNG_DPI, contrast_names, fmt_pp, is_missing  # noqa: E402

__all__ = ["FIGURES", "TITLES", "COLUMN", "FULL", "STYLE", "draw_figures", "export", "export_drawn",
           "png_bytes", "save_pdf", "close"]

NO_HUMAN = "no human labels in the store"
_XLABEL_CHARS = 30  # fig1's x label, centred under its axes, fits a column figure at this width


def _pct(rows: list[dict], key: str) -> list[float]:
    return [100 * r[key] if not is_missing(r.get(key)) else 0.0 for r in rows]


def _model_label(model: str, n: Any) -> str:
    return f"{fit(model)}\n(n = {n})"


# -- Figure 1 -----------------------------------------------------------------------------------

def leaderboard(report: Report) -> Figure:
    regime = figure_regime(report)
    if regime == "surface":
        return _surface_leaderboard(report)
    rows = report.overall if regime == "human" else _best_first(report.judge or [])
    fig, ax = plt.subplots(figsize=(COLUMN, 0.8 + 0.42 * max(len(rows), 1)), layout="constrained")
    if regime is None:
        empty_panel(ax, "Strict accuracy", NO_HUMAN)
        return fig
    _accuracy_bars(ax, rows, model_colours(report))
    if regime == "human":
        ax.set_xlabel(f"strict accuracy (%), {correct_heading(report, 'human labels')}")
    else:  # wrapped: centred under an axes that long model names push right, it must still fit
        ax.set_xlabel(fit(f"strict accuracy (%), LLM judge, not human ({report.judge_rater})",
                          _XLABEL_CHARS, lines=3))
    return fig


def _best_first(rows: list[dict]) -> list[dict]:
    """The judge rows come in human order, which does not exist here: sort by their accuracy."""
    return sorted(rows, key=lambda r: (-row_value(r, "accuracy", -1.0), r["model"]))


def _accuracy_bars(ax, rows: list[dict], colours: dict[str, str]) -> None:
    values, highs = _pct(rows, "accuracy"), _pct(rows, "ci_high")
    y = list(range(len(rows)))
    bar_colours = [colours.get(r["model"], NEUTRAL) for r in rows]
    ax.barh(y, values, xerr=errors(values, _pct(rows, "ci_low"), highs), height=0.6, color=bar_colours, **BAR)
    zero_marks(ax, y, values, bar_colours, horizontal=True)
    value_labels(ax, y, values, highs, [f"{v:.1f}" for v in values], horizontal=True)
    ax.set_yticks(y, [_model_label(r["model"], r["n"]) for r in rows])
    ax.invert_yaxis()  # best model on top
    ax.set_xlim(*score_limits(values, [], highs, percent=True))
    ax.set_xticks([0, 25, 50, 75, 100])
    grid(ax, "x")


def _surface_leaderboard(report: Report) -> Figure:
    """No labels at all: mean BLEU-2 and BERTScore-F1 per model, one panel for each the store has."""
    rows = sorted(report.regimes, key=lambda r: (-row_value(r, _lead_metric(report)), r["model"]))
    metrics = [m for m in METRICS if any(not is_missing(r.get(m)) for r in rows)]
    fig, axes = plt.subplots(1, len(metrics), figsize=(FULL if len(metrics) > 1 else COLUMN,
                                                       0.8 + 0.42 * max(len(rows), 1)),
                             sharey=True, layout="constrained", squeeze=False)
    axes = list(axes.flat)
    y, colours = list(range(len(rows))), model_colours(report)
    for ax, metric in zip(axes, metrics):
        name = METRICS[metric]
        _regime_panel(ax, rows, y, colours, (f"{name}: mean score", metric, f"{metric}_ci_low",
                                             f"{metric}_ci_high", False, f"no {name} scores in the store"))
        ax.set_xlabel(f"mean {METRICS[metric]}, not accuracy (no labels)")
    axes[0].set_yticks(y, [_model_label(r["model"], r["bleu2_n"] or r["bertscore_f1_n"]) for r in rows])
    axes[0].invert_yaxis()
    return fig


# -- Figure 2 -----------------------------------------------------------------------------------

def contamination_gap(report: Report) -> Figure:
    regime = figure_regime(report)
    if regime == "surface":
        return _surface_gap(report)
    rows = (report.gap if regime == "human" else report.judge_gap) or []  # ordered by gap
    fig, ax = plt.subplots(figsize=(COLUMN if len(rows) <= 4 else FULL, 2.8), layout="constrained")
    if regime is None or not rows:
        empty_panel(ax, "Contamination gap", NO_HUMAN)
        return fig
    _subset_bars(fig, ax, rows, contrast_names(report), "accuracy", 100, lambda r: fmt_pp(r["gap"]))
    ax.set_ylim(0, 115)
    ax.set_yticks([0, 25, 50, 75, 100])
    _narrow(ax, len(rows))
    who = correct_heading(report, "human labels") if regime == "human" else "LLM judge, not human"
    ax.set_ylabel(f"strict accuracy (%), {who}")
    return fig


def _subset_bars(fig, ax, rows: list[dict], contrast: dict, value: str, scale: float,
                 annotate: Callable[[dict], str]) -> None:
    """Documented and undocumented bars side by side per model, the difference written above the
    higher of the two intervals (the gap label as the gap table prints it)."""
    x = list(range(len(rows)))
    for offset, side in ((-0.2, "documented"), (0.2, "undocumented")):
        values = [scale * row_value(r, f"{side}_{value}") for r in rows]
        lows = [scale * row_value(r, f"{side}_ci_low", math.nan) for r in rows]
        highs = [scale * row_value(r, f"{side}_ci_high", math.nan) for r in rows]
        ax.bar([xi + offset for xi in x], values, width=0.4, yerr=errors(values, lows, highs),
               color=SUBSET_COLOURS[side], label=f"{contrast[side]} ({side})", **BAR)
        zero_marks(ax, [xi + offset for xi in x], values, [SUBSET_COLOURS[side]] * len(x), horizontal=False,
                   span=0.4)
    tops = [scale * max(row_value(r, f"{side}_ci_high", row_value(r, f"{side}_{value}"))
                        for side in ("documented", "undocumented")) for r in rows]
    value_labels(ax, x, tops, tops, [annotate(r) for r in rows], horizontal=False)
    ax.set_xticks(x, [fit(r["model"]) for r in rows], rotation=20, ha="right", rotation_mode="anchor")
    if not fig.legends:
        fig.legend(loc="outside upper center", ncols=2, frameon=False)
    grid(ax, "y")


def _surface_gap(report: Report) -> Figure:
    """No labels at all: documented vs undocumented score means, BLEU-2 then BERTScore-F1 (the
    panel order of every figure), models ordered by the lead metric's difference."""
    surface, lead = report.surface_by_subset, _lead_metric(report)
    order = [r["model"] for r in sorted(surface[lead], key=lambda r: (-row_value(r, "difference"), r["model"]))]
    metrics = [m for m in METRICS if surface.get(m)]  # a panel only for a metric with scores
    fig, axes = plt.subplots(1, len(metrics), figsize=(FULL if len(metrics) > 1 else COLUMN, 2.8),
                             layout="constrained", squeeze=False)
    for ax, metric in zip(axes.flat, metrics):
        rows = {r["model"]: r for r in surface[metric]}
        picked = [rows[m] for m in order if m in rows]
        _subset_bars(fig, ax, picked, contrast_names(report), "mean", 1, _ratio_label)
        _pad_top(ax)
        _narrow(ax, len(order))
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_title(f"{METRICS[metric]}: mean score")
        ax.set_ylabel(f"mean {METRICS[metric]}, not accuracy")
    return fig


def _ratio_label(row: dict) -> str:
    """The paper's documented/undocumented ratio; the difference where a ratio means nothing."""
    if not is_missing(row["ratio"]):
        return f"ratio {row['ratio']:.2f}×"
    return "ratio n/a" if is_missing(row["difference"]) else f"Δ {row['difference']:+.3f} (no ratio)"


def _pad_top(ax) -> None:
    """Head room above the tallest interval for the ratio labels; 0-1 when every mean is 0."""
    low, high = ax.get_ylim()
    low, high = min(low, 0), (high if high > 1e-6 else 1.0)
    ax.set_ylim(low, high + 0.15 * (high - low))


def _narrow(ax, models: int) -> None:
    """Keep one or two models' bars from filling the whole width."""
    if models < 3:
        ax.set_xlim(-1, models)


def _lead_metric(report: Report) -> str:
    """BERTScore-F1 when present (the metric the paper leans on for §4.3), else BLEU-2."""
    surface = report.surface_by_subset or {}
    return "bertscore_f1" if surface.get("bertscore_f1") else "bleu2"


# -- Figure 3 -----------------------------------------------------------------------------------

_PANELS = (  # (title, column, low, high, is a percentage, missing-data reason), in REGIME_ORDER
    ("Human: strict accuracy (%)", "human_accuracy", "human_ci_low", "human_ci_high", True,
     "no human labels in the store"),
    ("LLM judge: strict accuracy (%)", "judge_accuracy", "judge_ci_low", "judge_ci_high", True,
     "no judge labels in the store"),
    ("BLEU-2: mean score", "bleu2", "bleu2_ci_low", "bleu2_ci_high", False, "no BLEU-2 scores in the store"),
    ("BERTScore-F1: mean score", "bertscore_f1", "bertscore_f1_ci_low", "bertscore_f1_ci_high", False,
     "no BERTScore-F1 scores in the store"),
)


def _regime_rows(report: Report) -> list[dict]:
    """Table 5 rows plus the accuracy intervals, which live in the overall and judge sections."""
    human = {r["model"]: r for r in report.overall or []}
    judge = {r["model"]: r for r in report.judge or []}
    rows = []
    for r in report.regimes or []:
        h, j = human.get(r["model"], {}), judge.get(r["model"], {})
        rows.append({**r, "human_ci_low": h.get("ci_low"), "human_ci_high": h.get("ci_high"),
                     "judge_ci_low": j.get("ci_low"), "judge_ci_high": j.get("ci_high")})
    return rows


def available_panels(rows: list[dict]) -> list[tuple]:
    """The regimes with data in at least one model; the others are left out (named in the notes)."""
    return [p for p in _PANELS if any(not is_missing(r.get(p[1])) for r in rows)]


def metric_disagreement(report: Report) -> Figure:
    rows = _regime_rows(report)
    panels = available_panels(rows)
    columns = 1 if len(panels) <= 1 else 2
    lines = -(-max(len(panels), 1) // columns)
    fig, axes = plt.subplots(lines, columns, figsize=(COLUMN if columns == 1 else FULL,
                                                      lines * (0.75 + 0.3 * max(len(rows), 1))),
                             sharey=True, layout="constrained", squeeze=False)
    flat = list(axes.flat)
    if not panels:
        empty_panel(flat[0], "Scoring regimes", "no labels or scores in the store")
        return fig
    y, colours = list(range(len(rows))), model_colours(report)
    for letter, ax, panel in zip("abcd", flat, panels):
        title = panel[0] if panel[1] != "human_accuracy" else (
            f"{correct_heading(report)}: strict accuracy (%)")
        _regime_panel(ax, rows, y, colours, (f"({letter}) {title}", *panel[1:]))
    for ax in flat[len(panels):]:
        fig.delaxes(ax)
    flat[0].set_yticks(y, [fit(r["model"]) for r in rows])
    flat[0].invert_yaxis()  # human order, best on top, in every panel (the y axis is shared)
    return fig


def _regime_panel(ax, rows, y, colours: dict[str, str], panel: tuple) -> None:
    """One regime's per-model bars in the models' colours, each value written just past its
    interval, on an axis that fits them (0-1 for an all-zero score panel)."""
    title, column, low, high, percent, reason = panel
    if not any(not is_missing(r.get(column)) for r in rows):
        empty_panel(ax, title.split(":")[0], reason)
        return
    scale = 100 if percent else 1
    values = [scale * r[column] if not is_missing(r.get(column)) else 0.0 for r in rows]
    lows = [scale * r[low] if not is_missing(r.get(low)) else math.nan for r in rows]
    highs = [scale * r[high] if not is_missing(r.get(high)) else math.nan for r in rows]
    bar_colours = [colours.get(r["model"], NEUTRAL) for r in rows]
    ax.barh(y, values, xerr=errors(values, lows, highs), height=0.6, color=bar_colours, **BAR)
    defined = [not is_missing(r.get(column)) for r in rows]
    zero_marks(ax, y, [v if ok else None for v, ok in zip(values, defined)], bar_colours, horizontal=True)
    texts = [(f"{v:.1f}" if percent else f"{v:.3f}") if ok else "n/a" for v, ok in zip(values, defined)]
    value_labels(ax, y, values, highs, texts, horizontal=True)
    ax.set_title(title, loc="left")
    ax.set_xlim(*score_limits(values, lows, highs, percent))
    if percent:
        ax.set_xticks([0, 25, 50, 75, 100])
    grid(ax, "x")


# -- Figure 4 -----------------------------------------------------------------------------------

def per_title(report: Report) -> Figure:
    """Accuracy per title, one bar per model (each in its colour), the documented subset's titles first."""
    rows = report.per_title or []
    titles = _titles_by_subset(rows, contrast_names(report))
    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, ax = plt.subplots(figsize=(FULL, 2.9), layout="constrained")
    if not rows:
        empty_panel(ax, "Accuracy per title", NO_HUMAN)
        return fig
    cell = {(r["model"], r["title"], r["subset"]): r for r in rows}
    width, colours = 0.8 / len(models), model_colours(report)
    for i, model in enumerate(models):
        picked = [cell.get((model, t, s), {}) for t, s in titles]
        values, colour = _pct(picked, "accuracy"), colours.get(model, NEUTRAL)
        x = [t - 0.4 + width * (i + 0.5) for t in range(len(titles))]
        ax.bar(x, values, width=width * 0.92, yerr=errors(values, _pct(picked, "ci_low"), _pct(picked, "ci_high")),
               color=colour, label=fit(model, 30), **{**BAR, "capsize": 1.5})
        zero_marks(ax, x, [v if p else None for v, p in zip(values, picked)], [colour] * len(x), horizontal=False,
                   span=width * 0.92)
    _subset_dividers(ax, titles, contrast_names(report))
    ax.set_xticks(range(len(titles)), [fit(t, 20) for t, _ in titles], rotation=20 if len(titles) > 4 else 0,
                  ha="right" if len(titles) > 4 else "center", rotation_mode="anchor")
    ax.set_ylim(0, 112)
    ax.set_yticks([0, 25, 50, 75, 100])
    ax.set_ylabel("strict accuracy (%), human labels")
    fig.legend(loc="outside upper center", ncols=min(len(models), 4), frameon=False)
    grid(ax, "y")
    return fig


def _titles_by_subset(rows: list[dict], contrast: dict) -> list[tuple[str, str]]:
    sides = (contrast["documented"], contrast["undocumented"])
    titles = list(dict.fromkeys((r["title"], r["subset"]) for r in rows))
    return sorted(titles, key=lambda t: subset_rank(t[1], sides))  # stable: first-seen order within a subset


def _subset_dividers(ax, titles: list[tuple[str, str]], contrast: dict) -> None:
    """A dashed line between subsets and each subset's name above its titles."""
    sides = {contrast["documented"]: "documented", contrast["undocumented"]: "undocumented"}
    start = 0
    for i in range(1, len(titles) + 1):
        if i == len(titles) or titles[i][1] != titles[start][1]:
            subset = titles[start][1]
            name = f"{subset} ({sides[subset]})" if subset in sides else str(subset)
            ax.text((start + i - 1) / 2, 106, name, ha="center", fontsize=7.5, style="italic")
            if i < len(titles):
                ax.axvline(i - 0.5, color=NEUTRAL, linewidth=0.6, linestyle="--")
            start = i


# -- all figures --------------------------------------------------------------------------------

FIGURES: dict[str, Callable[[Report], Figure]] = {
    "fig1_leaderboard": leaderboard,
    "fig2_contamination_gap": contamination_gap,
    "fig3_metric_disagreement": metric_disagreement,
    "fig4_per_title": per_title,
}
TITLES = {  # drawn in only with titles=True (--figure-titles); the captions carry them otherwise
    "fig1_leaderboard": "Accuracy over all items",
    "fig2_contamination_gap": "Documented vs undocumented subsets, ordered by gap",
    "fig3_metric_disagreement": "The same answers under each scoring regime",
    "fig4_per_title": "Accuracy per title, grouped by subset",
}


def draw_figures(report: Report, titles: bool = False) -> dict[str, Figure]:
    """Every figure the report has data for (fig4 needs human labels); call it, and save what it
    returns, inside ``plt.rc_context(STYLE)`` (as :func:`export` does): tick labels are made at
    save time and must see the style too."""
    drawn = {}
    for name, draw in FIGURES.items():
        if _has_data(name, report):
            drawn[name] = draw(report)
        if titles:
            drawn[name].suptitle(TITLES[name], fontsize=9)
    return drawn


def _has_data(name: str, report: Report) -> bool:
    """A figure is drawn only where it has something to show: no empty panel stands in for a section."""
    if name == "fig1_leaderboard":
        return figure_regime(report) is not None
    if name == "fig2_contamination_gap":
        return bool(report.contrast) and figure_regime(report) is not None
    if name == "fig3_metric_disagreement":
        return has_regimes(report.regimes)
    return bool(report.per_title)


def export(report: Report, titles: bool = False, out: Path | None = None) -> dict[str, bytes]:
    """Each figure as PNG bytes (what the HTML embeds); with ``out``, also saved as PNG and PDF."""
    return export_drawn(lambda: draw_figures(report, titles), out)


def export_drawn(draw: Callable[[], dict[str, Figure]], out: Path | None = None) -> dict[str, bytes]:
    """The figures ``draw`` makes (inside the report's style) as PNG bytes; with ``out``, also
    saved as PNG and PDF. Each figure is closed once written."""
    pngs = {}
    with plt.rc_context(STYLE):
        for name, fig in draw().items():
            pngs[name] = png_bytes(fig)
            if out is not None:
                (out / f"{name}.png").write_bytes(pngs[name])
                save_pdf(fig, out / f"{name}.pdf")
            close(fig)
    return pngs


def png_bytes(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=PNG_DPI)
    return buffer.getvalue()


def save_pdf(fig: Figure, path: Path) -> None:
    """Vector PDF; no creation date in it, so reruns on the same store give identical files."""
    fig.savefig(path, format="pdf", metadata={"CreationDate": None})


def close(fig: Figure) -> None:
    plt.close(fig)
