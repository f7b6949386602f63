"""The probe validation section's figures, drawn from ``report.validation`` alone in the
report's style: ROC curves per measure (each planted model solid, its base model dashed), and,
when a format has several doses, ROC-AUC against epochs (ARCHITECTURE.md, The report)."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from matplotlib.figure import Figure

from contam.harness.report.model import Report
from contam.harness.report.plots.style import COLUMN, FULL, grid
from contam.harness.report.plots.paper import export_drawn
from contam.harness.report.parts.validation import DOSE_FIGURE, MEASURES, READINGS, ROC_FIGURE, section

__all__ = ["roc_curves", "auc_by_dose", "draw", "export"]

# Every measure but the density study's accuracy shares (read from the registry's readings)
_AUC_MEASURES = [m.label for (source, _), m in READINGS.items() if source != "density" or m.reading != "share"]


def roc_curves(report: Report) -> Figure:
    rows = [r for r in report.validation["rows"] if r["roc_fpr"]]
    measures = [m for m in MEASURES.values() if any(r["measure"] == m for r in rows)]
    columns = min(3, len(measures))
    lines = math.ceil(len(measures) / columns)
    fig = Figure(figsize=(FULL if columns > 1 else COLUMN, 2.3 * lines), layout="constrained")
    axes = fig.subplots(lines, columns, squeeze=False)
    for ax, measure in zip(axes.flat, measures):
        _roc_panel(ax, measure, [r for r in rows if r["measure"] == measure])
    for ax in list(axes.flat)[len(measures):]:
        ax.set_axis_off()
    return fig


def _roc_panel(ax, measure: str, rows: list[dict]) -> None:
    drawn = set()
    for row in rows:
        key = (row["model"], tuple(row["roc_fpr"]), tuple(row["roc_tpr"]))
        if key in drawn:  # the base model against the same items, under another planting
            continue
        drawn.add(key)
        style = "--" if row["role"] == "base" else "-"
        ax.plot(row["roc_fpr"], row["roc_tpr"], style, linewidth=1,
                label=f"{row['model']} ({row['auc']:.2f})")
    ax.plot([0, 1], [0, 1], ":", color="grey", linewidth=0.8)
    ax.set_title(measure)
    ax.set_xlabel("FPR")
    ax.set_ylabel("TPR")
    ax.legend(fontsize=5, loc="lower right")
    grid(ax, "both")


def auc_by_dose(report: Report) -> Figure:
    part = report.validation
    fig = Figure(figsize=(COLUMN * 1.4, 2.6), layout="constrained")
    ax = fig.add_subplot()
    series: dict[tuple[str, str], list[tuple[int, dict]]] = defaultdict(list)
    for row in part["rows"]:
        if row["measure"] in _AUC_MEASURES and not math.isnan(row["auc"]):
            epochs = 0 if row["role"] == "base" else row["epochs"]
            for format in row["format"].split(", "):  # a base row stands for every format of its set
                series[(format, row["measure"])].append((epochs, row))
    for (format, measure), points in sorted(series.items()):
        points = sorted(dict(points).items())  # one point per dose (the base once)
        if len(points) < 3:  # the base and at least two doses
            continue
        xs = [x for x, _ in points]
        ys = [r["auc"] for _, r in points]
        low = [r["auc"] - r["auc_ci_low"] for _, r in points]
        high = [r["auc_ci_high"] - r["auc"] for _, r in points]
        ax.errorbar(xs, ys, yerr=[low, high], marker="o", markersize=3, capsize=2,
                    linewidth=1, label=f"{measure} ({format})")
    ax.axhline(0.5, color="grey", linestyle=":", linewidth=0.8)
    ax.set_xlabel("epochs of fine-tuning (0 = base model)")
    ax.set_ylabel("ROC-AUC, planted vs not")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=5)
    grid(ax, "y")
    return fig


def draw(report: Report) -> dict[str, Figure]:
    """The figures the section lists (none without plantings)."""
    built = section(report)
    makers = {ROC_FIGURE: roc_curves, DOSE_FIGURE: auc_by_dose}
    return {name: makers[name](report) for name in (built.figures if built else [])}


def export(report: Report, out: Path | None = None) -> dict[str, bytes]:
    return export_drawn(lambda: draw(report), out)
