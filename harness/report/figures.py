"""The report's three figures, drawn from the report dict alone (matplotlib, Agg backend).

fig1_leaderboard          strict human accuracy per model, best first, 95% Wilson bars
fig2_contamination_gap    documented vs undocumented accuracy per model, largest gap first
fig3_metric_disagreement  human, judge, BLEU-2, BERTScore-F1 side by side, models in human order

Without human labels, figures 1 and 2 show the best regime the store has
(:func:`harness.report.analysis.figure_regime`): LLM-judge strict accuracy with Wilson bars, else the
mean BLEU-2 and BERTScore-F1 with Student-t bars; their titles say so, so that neither is read
as human-labelled accuracy.
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

from harness.report.analysis import figure_regime  # noqa: E402

__all__ = ["FIGURES", "draw_figures", "png_bytes", "save_pdf", "close"]

DOCUMENTED, UNDOCUMENTED, NEUTRAL = "#1f5fa8", "#d9822b", "#4d4d4d"
METRIC_NAMES = {"bleu2": "BLEU-2", "bertscore_f1": "BERTScore-F1"}
NO_HUMAN = "no human labels in the store"
NO_LABELS = "no human or judge labels in the store"
_BAR = {"height": 0.6, "capsize": 3, "error_kw": {"elinewidth": 1, "ecolor": "black"}}


def _nan(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _errors(values: list[float], lows: list[float], highs: list[float]) -> list[list[float]]:
    """matplotlib wants distances below and above each value; undefined limits draw no bar."""
    below = [0.0 if _nan(lo) else v - lo for v, lo in zip(values, lows)]
    above = [0.0 if _nan(hi) else hi - v for v, hi in zip(values, highs)]
    return [below, above]


def _pct(rows: list[dict], key: str) -> list[float]:
    return [100 * r[key] if not _nan(r[key]) else 0.0 for r in rows]


def _empty_panel(ax, title: str, reason: str) -> None:
    ax.set_title(title, fontsize=10)
    ax.text(0.5, 0.5, reason, ha="center", va="center", wrap=True, fontsize=9, color=NEUTRAL,
            transform=ax.transAxes)
    ax.set_xticks([])


# -- Figure 1 -----------------------------------------------------------------------------------
# Human accuracy when human labels exist; otherwise the best regime there is (judge accuracy,
# else surface-metric means), titled so that nobody takes it for human-labelled accuracy.

def leaderboard(report: dict) -> Figure:
    regime = figure_regime(report)
    if regime == "surface":
        return _surface_leaderboard(report)
    rows = report["overall"] if regime == "human" else _best_first(report["judge"] or [])
    height = 1.2 + 0.55 * max(len(rows), 1) + (0.4 if regime == "judge" else 0)  # two-line title
    fig, ax = plt.subplots(figsize=(7, height), layout="constrained")
    if regime is None:
        _empty_panel(ax, "Strict accuracy", NO_HUMAN)
        return fig
    _accuracy_bars(ax, rows)
    if regime == "human":
        ax.set_xlabel("strict accuracy, human labels (%); bars: 95% Wilson interval")
        ax.set_title(f"Accuracy over all items (rater: {report['human_rater']})", fontsize=11)
    else:
        ax.set_xlabel("strict accuracy, LLM-judge labels (%); bars: 95% Wilson interval")
        fig.suptitle(f"LLM-judge accuracy over all items (rater: {report['judge_rater']})\n"
                     f"NOT human accuracy: {NO_HUMAN}", fontsize=10)
    return fig


def _best_first(rows: list[dict]) -> list[dict]:
    """The judge rows come in human order, which does not exist here: sort by their accuracy."""
    return sorted(rows, key=lambda r: (-_value(r, "accuracy", -1.0), r["model"]))


def _accuracy_bars(ax, rows: list[dict]) -> None:
    values = _pct(rows, "accuracy")
    errors = _errors(values, _pct(rows, "ci_low"), _pct(rows, "ci_high"))
    y = range(len(rows))
    ax.barh(y, values, xerr=errors, color=NEUTRAL, **_BAR)
    for yi, v, hi in zip(y, values, _pct(rows, "ci_high")):
        ax.text(hi + 1.5, yi, f"{v:.1f}%", va="center", fontsize=9)
    ax.set_yticks(list(y), [f"{r['model']}  (n={r['n']})" for r in rows])
    ax.invert_yaxis()  # best model on top
    ax.set_xlim(0, 110)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)


def _surface_leaderboard(report: dict) -> Figure:
    """No labels at all: mean BLEU-2 and BERTScore-F1 per model, one panel each."""
    rows = sorted(report["regimes"], key=lambda r: (-_value(r, _lead_metric(report)), r["model"]))
    fig, axes = plt.subplots(1, 2, figsize=(10, 1.6 + 0.55 * max(len(rows), 1)), sharey=True,
                             layout="constrained")
    y = list(range(len(rows)))
    for ax, metric in zip(axes, METRIC_NAMES):
        _regime_panel(ax, rows, y, f"{METRIC_NAMES[metric]}: mean score", metric, f"{metric}_ci_low",
                      f"{metric}_ci_high", False, f"no {METRIC_NAMES[metric]} scores in the store")
        ax.set_xlabel(f"mean {METRIC_NAMES[metric]}; bars: 95% Student-t interval", fontsize=9)
    axes[0].set_yticks(y, [f"{r['model']}  (n={r['bleu2_n'] or r['bertscore_f1_n']})" for r in rows])
    axes[0].invert_yaxis()
    fig.suptitle(f"Surface-metric scores per model, NOT accuracy\n({NO_LABELS}; "
                 f"models ordered by mean {METRIC_NAMES[_lead_metric(report)]})", fontsize=11)
    return fig


# -- Figure 2 -----------------------------------------------------------------------------------

def contamination_gap(report: dict) -> Figure:
    regime = figure_regime(report)
    if regime == "surface":
        return _surface_gap(report)
    rows = (report["gap"] if regime == "human" else report.get("judge_gap")) or []  # ordered by gap
    fig, ax = plt.subplots(figsize=(max(6.5, 1.6 * len(rows) + 2), 4.8), layout="constrained")
    if regime is None or not rows:
        _empty_panel(ax, "Contamination gap", NO_HUMAN)
        return fig
    _subset_bars(ax, rows, report["contrast"], "accuracy", 100,
                 lambda r: f"gap {100 * r['gap']:.1f} pp")
    ax.set_ylim(0, 115)
    if regime != "human":
        _narrow(ax, len(rows))
    if regime == "human":
        ax.set_ylabel("strict accuracy (%); bars: 95% Wilson interval")
        ax.set_title("Documented vs undocumented subsets, ordered by gap", fontsize=11)
    else:
        ax.set_ylabel("strict accuracy, LLM-judge labels (%); bars: 95% Wilson interval", fontsize=9)
        ax.set_title(f"Documented vs undocumented subsets, ordered by gap\nregime: LLM-judge strict "
                     f"accuracy ({report['judge_rater']}); {NO_HUMAN}", fontsize=10)
    return fig


def _subset_bars(ax, rows: list[dict], contrast: dict, value: str, scale: float,
                 annotate: Callable[[dict], str]) -> None:
    """Documented and undocumented bars side by side per model, the difference written above."""
    x = list(range(len(rows)))
    for offset, side, color in ((-0.2, "documented", DOCUMENTED), (0.2, "undocumented", UNDOCUMENTED)):
        values = [scale * _value(r, f"{side}_{value}") for r in rows]
        lows = [scale * _value(r, f"{side}_ci_low", math.nan) for r in rows]
        highs = [scale * _value(r, f"{side}_ci_high", math.nan) for r in rows]
        ax.bar([xi + offset for xi in x], values, width=0.4, yerr=_errors(values, lows, highs),
               color=color, label=f"{contrast[side]} ({side})", capsize=3, error_kw=_BAR["error_kw"])
    tops = [scale * max(_value(r, "documented_ci_high", _value(r, f"documented_{value}")),
                        _value(r, "undocumented_ci_high", _value(r, f"undocumented_{value}")))
            for r in rows]
    room = 3 if scale == 100 else 0.03 * (max(tops, default=0) or 1)
    for xi, r, top in zip(x, rows, tops):
        ax.text(xi, top + room, annotate(r), ha="center", fontsize=9)
    ax.set_xticks(x, [r["model"] for r in rows], rotation=15, ha="right")
    ax.legend(loc="upper right", fontsize=9, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def _surface_gap(report: dict) -> Figure:
    """No labels at all: documented vs undocumented score means, BERTScore-F1 then BLEU-2."""
    surface, lead = report["surface_by_subset"], _lead_metric(report)
    order = [r["model"] for r in sorted(surface[lead], key=lambda r: (-_value(r, "difference"), r["model"]))]
    fig, axes = plt.subplots(1, 2, figsize=(max(10, 3.2 * len(order) + 3), 4.8), layout="constrained")
    for ax, metric in zip(axes, ("bertscore_f1", "bleu2")):
        rows = {r["model"]: r for r in surface[metric] or []}
        if not rows:
            _empty_panel(ax, METRIC_NAMES[metric], f"no {METRIC_NAMES[metric]} scores in the store")
            continue
        _subset_bars(ax, [rows[m] for m in order if m in rows], report["contrast"], "mean", 1, _ratio_label)
        _pad_top(ax)
        _narrow(ax, len(order))
        ax.axhline(0, color="black", linewidth=0.8)
        ax.set_title(f"{METRIC_NAMES[metric]}: mean score", fontsize=10)
        ax.set_ylabel(f"mean {METRIC_NAMES[metric]}; bars: 95% Student-t interval", fontsize=9)
    fig.suptitle(f"Documented vs undocumented subsets, ordered by the {METRIC_NAMES[lead]} difference\n"
                 f"regime: mean BERTScore-F1 and BLEU-2 per subset, NOT accuracy ({NO_LABELS})",
                 fontsize=11)
    return fig


def _ratio_label(row: dict) -> str:
    """The paper's documented/undocumented ratio; the difference where a ratio means nothing."""
    if not _nan(row["ratio"]):
        return f"ratio {row['ratio']:.2f}×"
    return "ratio n/a" if _nan(row["difference"]) else f"Δ {row['difference']:+.3f} (no ratio)"


def _pad_top(ax) -> None:
    """Head room above the tallest interval for the legend and the ratio labels."""
    low, high = ax.get_ylim()
    ax.set_ylim(min(low, 0), high + 0.25 * (high - min(low, 0)))


def _narrow(ax, models: int) -> None:
    """Keep one or two models' bars from filling the whole width."""
    if models < 3:
        ax.set_xlim(-1, models)


def _lead_metric(report: dict) -> str:
    """BERTScore-F1 when present (the metric the paper leans on for §4.3), else BLEU-2."""
    surface = report.get("surface_by_subset") or {}
    return "bertscore_f1" if surface.get("bertscore_f1") else "bleu2"


def _value(row: dict, key: str, default: float = 0.0) -> float:
    return default if _nan(row.get(key)) else row[key]


# -- Figure 3 -----------------------------------------------------------------------------------

_PANELS = (  # (title, column, low, high, is a percentage, missing-data reason)
    ("Human: strict accuracy (%)", "human_accuracy", "human_ci_low", "human_ci_high", True,
     "no human labels in the store"),
    ("LLM judge: strict accuracy (%)", "judge_accuracy", "judge_ci_low", "judge_ci_high", True,
     "no judge labels in the store"),
    ("BLEU-2: mean score", "bleu2", "bleu2_ci_low", "bleu2_ci_high", False,
     "no BLEU-2 scores in the store"),
    ("BERTScore-F1: mean score", "bertscore_f1", "bertscore_f1_ci_low", "bertscore_f1_ci_high", False,
     "no BERTScore-F1 scores in the store"),
)


def _regime_rows(report: dict) -> list[dict]:
    """Table 5 rows plus the accuracy intervals, which live in the overall and judge sections."""
    human = {r["model"]: r for r in report["overall"] or []}
    judge = {r["model"]: r for r in report["judge"] or []}
    rows = []
    for r in report["regimes"] or []:
        h, j = human.get(r["model"], {}), judge.get(r["model"], {})
        rows.append({**r, "human_ci_low": h.get("ci_low"), "human_ci_high": h.get("ci_high"),
                     "judge_ci_low": j.get("ci_low"), "judge_ci_high": j.get("ci_high")})
    return rows


def metric_disagreement(report: dict) -> Figure:
    rows = _regime_rows(report)
    fig, axes = plt.subplots(1, 4, figsize=(13, 1.6 + 0.55 * max(len(rows), 1)), sharey=True,
                             layout="constrained")
    y = list(range(len(rows)))
    for ax, panel in zip(axes, _PANELS):
        _regime_panel(ax, rows, y, *panel)
    axes[0].set_yticks(y, [r["model"] for r in rows])
    if rows:
        axes[0].invert_yaxis()  # human order, best on top, in every panel
    order = "human-accuracy order" if report["overall"] else "name order: no human labels"
    fig.suptitle(f"The same answers under four scoring regimes (models in {order}; "
                 "bars: 95% intervals)", fontsize=11)
    return fig


def _regime_panel(ax, rows, y, title, column, low, high, percent, reason) -> None:
    present = [r for r in rows if not _nan(r.get(column))]
    if not present:
        _empty_panel(ax, title.split(":")[0], reason)
        return
    scale = 100 if percent else 1
    values = [scale * r[column] if not _nan(r.get(column)) else 0.0 for r in rows]
    lows = [scale * r[low] if not _nan(r.get(low)) else math.nan for r in rows]
    highs = [scale * r[high] if not _nan(r.get(high)) else math.nan for r in rows]
    ax.barh(y, values, xerr=_errors(values, lows, highs), color=NEUTRAL if percent else "#6a8caf", **_BAR)
    for yi, v, r in zip(y, values, rows):
        label = "n/a" if _nan(r.get(column)) else (f"{v:.1f}%" if percent else f"{v:.3f}")
        ax.text(0.98, yi, label, va="center", ha="right", fontsize=8, transform=ax.get_yaxis_transform(),
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1, "alpha": 0.8})
    ax.set_title(title, fontsize=10)
    ax.set_xlim(*_panel_limits(values, lows, highs, percent))
    if percent:
        ax.set_xticks([0, 25, 50, 75, 100])
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)


def _panel_limits(values, lows, highs, percent) -> tuple[float, float]:
    """Room for every bar and interval, plus a margin on the right for the value labels."""
    defined = [v for v in (*values, *lows, *highs) if not _nan(v)]
    top = 100 if percent else max(1e-9, *defined)
    return min(0.0, *defined) * 1.1, top * 1.3


FIGURES: dict[str, Callable[[dict], Figure]] = {
    "fig1_leaderboard": leaderboard,
    "fig2_contamination_gap": contamination_gap,
    "fig3_metric_disagreement": metric_disagreement,
}


def draw_figures(report: dict) -> dict[str, Figure]:
    return {name: draw(report) for name, draw in FIGURES.items()}


def png_bytes(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=150)
    return buffer.getvalue()


def save_pdf(fig: Figure, path: Path) -> None:
    """No creation date in the PDF, so reruns on the same store give identical files."""
    fig.savefig(path, format="pdf", metadata={"CreationDate": None})


def close(fig: Figure) -> None:
    plt.close(fig)
