"""The min-k probe's figure: per model (columns) and score (rows), the distribution of the
documented and the undocumented items' scores, as box plots with every item drawn as a point, and
the ROC-AUC with its interval under the model's name. Drawn from ``report.probes["min-k"]``
alone, in the report's style (:mod:`contam.harness.report.plots.paper`)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from contam.harness.report.model import Report
from contam.harness.report.plots.style import COLUMN, FULL, SUBSET_COLOURS, empty_panel, grid
from contam.harness.report.texts.format import contrast_names, is_missing
from contam.harness.report.parts.probe_mink import KIND, NAMES

__all__ = ["distributions", "CAPTION"]

CAPTION = ("Probe min-k: Min-K% (and Min-K%++ for local models) of each item's title, question and "
           "reference per model, on the documented and the undocumented subset; boxes with every "
           "item as a point; the ROC-AUC of documented vs undocumented with its 95% "
           "percentile-bootstrap interval heads each panel.")
_JITTER_SEED = 0  # the points' horizontal spread: the same drawing every time


def distributions(report: Report) -> Figure:
    rows, contrast = report.probes[KIND]["rows"], contrast_names(report)
    models = list(dict.fromkeys(r["model"] for r in rows))
    scores = list(dict.fromkeys((r["metric"], r["k"]) for r in rows))
    width = min(FULL, max(COLUMN, 1.8 * len(models)))
    fig = Figure(figsize=(width, 2.2 * len(scores)), layout="constrained")
    axes = fig.subplots(len(scores), len(models), squeeze=False)
    by_key = {(r["model"], r["metric"], r["k"]): r for r in rows}
    for i, (metric, k) in enumerate(scores):
        for j, model in enumerate(models):
            _panel(axes[i][j], by_key.get((model, metric, k)), contrast, model)
            if j == 0:
                axes[i][j].set_ylabel(f"{NAMES.get(metric, metric)} (k = {k:g})")
    return fig


def _panel(ax, row: dict | None, contrast: dict, model: str) -> None:
    if row is None:  # a server model has no Min-K%++
        empty_panel(ax, model, "not computed")
        return
    ax.set_title(f"{model}\n{_auc_label(row)}")
    groups = [row["documented_values"], row["undocumented_values"]]
    ax.boxplot(groups, positions=[0, 1], widths=0.5, showfliers=False,
               medianprops={"color": "black"})
    rng = np.random.default_rng(_JITTER_SEED)
    colours = (SUBSET_COLOURS["documented"], SUBSET_COLOURS["undocumented"])
    for x, (values, colour) in enumerate(zip(groups, colours)):
        ax.scatter(x + rng.uniform(-0.15, 0.15, len(values)), values, s=6, color=colour,
                   alpha=0.7, linewidths=0)
    ax.set_xticks([0, 1], [contrast["documented"], contrast["undocumented"]])
    grid(ax, "y")


def _auc_label(row: dict) -> str:
    if is_missing(row["auc"]):
        return "AUC —"
    if is_missing(row["auc_ci_low"]):
        return f"AUC {row['auc']:.2f}"
    return f"AUC {row['auc']:.2f} [{row['auc_ci_low']:.2f}, {row['auc_ci_high']:.2f}]"
