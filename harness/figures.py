"""The report's three figures, drawn from the report dict alone (matplotlib, Agg backend).

fig1_leaderboard          strict human accuracy per model, best first, 95% Wilson bars
fig2_contamination_gap    documented vs undocumented accuracy per model, largest gap first
fig3_metric_disagreement  human, judge, BLEU-2, BERTScore-F1 side by side, models in human order
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

__all__ = ["FIGURES", "draw_figures", "png_bytes", "save_pdf", "close"]

DOCUMENTED, UNDOCUMENTED, NEUTRAL = "#1f5fa8", "#d9822b", "#4d4d4d"
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

def leaderboard(report: dict) -> Figure:
    rows = report["overall"] or []
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.55 * max(len(rows), 1)), layout="constrained")
    if not rows:
        _empty_panel(ax, "Strict accuracy", "no human labels in the store")
        return fig
    values = _pct(rows, "accuracy")
    errors = _errors(values, _pct(rows, "ci_low"), _pct(rows, "ci_high"))
    y = range(len(rows))
    ax.barh(y, values, xerr=errors, color=NEUTRAL, **_BAR)
    for yi, v, hi in zip(y, values, _pct(rows, "ci_high")):
        ax.text(hi + 1.5, yi, f"{v:.1f}%", va="center", fontsize=9)
    ax.set_yticks(list(y), [f"{r['model']}  (n={r['n']})" for r in rows])
    ax.invert_yaxis()  # best model on top
    ax.set_xlim(0, 110)
    ax.set_xlabel("strict accuracy, human labels (%); bars: 95% Wilson interval")
    ax.set_title(f"Accuracy over all items (rater: {report['human_rater']})", fontsize=11)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    return fig


# -- Figure 2 -----------------------------------------------------------------------------------

def contamination_gap(report: dict) -> Figure:
    rows = report["gap"] or []  # already ordered by gap, largest first
    documented, undocumented = report["contrast"]["documented"], report["contrast"]["undocumented"]
    fig, ax = plt.subplots(figsize=(max(6.5, 1.6 * len(rows) + 2), 4.8), layout="constrained")
    if not rows:
        _empty_panel(ax, "Contamination gap", "no human labels in the store")
        return fig
    x = list(range(len(rows)))
    for offset, side, color, name in ((-0.2, "documented", DOCUMENTED, documented),
                                      (0.2, "undocumented", UNDOCUMENTED, undocumented)):
        values = _pct(rows, f"{side}_accuracy")
        errors = _errors(values, _pct(rows, f"{side}_ci_low"), _pct(rows, f"{side}_ci_high"))
        ax.bar([xi + offset for xi in x], values, width=0.4, yerr=errors, color=color,
               label=f"{name} (documented)" if side == "documented" else f"{name} (undocumented)",
               capsize=3, error_kw=_BAR["error_kw"])
    for xi, r in zip(x, rows):
        top = max(_pct([r], "documented_ci_high")[0], _pct([r], "undocumented_ci_high")[0])
        ax.text(xi, top + 3, f"gap {100 * r['gap']:.1f} pp", ha="center", fontsize=9)
    ax.set_xticks(x, [r["model"] for r in rows], rotation=15, ha="right")
    ax.set_ylim(0, 115)
    ax.set_ylabel("strict accuracy (%); bars: 95% Wilson interval")
    ax.set_title("Documented vs undocumented subsets, ordered by gap", fontsize=11)
    ax.legend(loc="upper right", fontsize=9, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    return fig


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
