"""The cdd probe's figure: per model, the share of documented and of undocumented items flagged as
peaked, side by side with 95% Wilson bars, Fisher's p written above. Drawn from
``report["probes"]["cdd"]`` alone, in the report's style (:mod:`harness.report.figures`)."""

from __future__ import annotations

from matplotlib.figure import Figure

from harness.report.figure_style import COLUMN, FULL, SUBSET_COLOURS
from harness.report.format import is_missing, p_clause

__all__ = ["flagged_shares", "CAPTION"]

CAPTION = ("Probe cdd: share of items flagged as peaked (Dong et al. 2024) on the documented and the "
           "undocumented subset per model; bars are 95% Wilson intervals, Fisher's exact p above.")
_BAR = {"capsize": 2, "error_kw": {"elinewidth": 0.8, "ecolor": "black", "capthick": 0.8}}


def flagged_shares(report: dict) -> Figure:
    part, contrast = report["probes"]["cdd"], report["contrast"]
    models = [r["model"] for r in part["per_model"]]
    by_key = {(r["model"], r["subset"]): r for r in part["per_subset"]}
    fisher = {r["model"]: r["fisher_p"] for r in part["contrast"]}
    fig = Figure(figsize=(COLUMN if len(models) <= 4 else FULL, 2.6), layout="constrained")
    ax = fig.subplots()
    x = list(range(len(models)))
    for offset, side in ((-0.2, "documented"), (0.2, "undocumented")):
        color = SUBSET_COLOURS[side]
        rows = [by_key.get((model, contrast[side])) for model in models]
        values = [100 * _share(r) for r in rows]
        errors = [[v - 100 * _limit(r, "ci_low", v / 100) for v, r in zip(values, rows)],
                  [100 * _limit(r, "ci_high", v / 100) - v for v, r in zip(values, rows)]]
        ax.bar([xi + offset for xi in x], values, width=0.4, yerr=errors, color=color,
               label=f"{contrast[side]} ({side})", **_BAR)
    for xi, model in zip(x, models):
        ax.text(xi, 104, p_clause(fisher.get(model)), ha="center", fontsize=7)
    ax.set_xticks(x, models, rotation=20 if len(models) > 2 else 0, ha="right" if len(models) > 2 else "center")
    ax.set_ylim(0, 112)
    ax.set_yticks([0, 25, 50, 75, 100])
    ax.set_ylabel("items flagged as peaked (%)")
    ax.grid(axis="y", linewidth=0.4, alpha=0.5)
    ax.set_axisbelow(True)
    fig.legend(loc="outside upper center", ncols=2, frameon=False)
    return fig


def _share(row: dict | None) -> float:
    if row is None or is_missing(row["flagged_share"]):
        return 0.0
    return row["flagged_share"]


def _limit(row: dict | None, key: str, default: float) -> float:
    if row is None or is_missing(row[key]):
        return default
    return row[key]
