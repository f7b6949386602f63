"""The cdd probe's figure: per model, the share of documented and of undocumented items flagged as
peaked, side by side with 95% Wilson bars, Fisher's p written above. Drawn from
``report.probes["cdd"]`` alone, in the report's style (:mod:`contam.harness.report.plots.paper`)."""

from __future__ import annotations

from matplotlib.figure import Figure

from contam.harness.report.model import Report
from contam.harness.report.texts.format import contrast_names
from contam.harness.report.plots.probe_bars import share_bars
from contam.harness.report.parts.probe_cdd import KIND

__all__ = ["flagged_shares", "CAPTION"]

CAPTION = ("Probe cdd: share of items flagged as peaked (Dong et al. 2024) on the documented and the "
           "undocumented subset per model; bars are 95% Wilson intervals, Fisher's exact p above.")


def flagged_shares(report: Report) -> Figure:
    part = report.probes[KIND]
    return share_bars([r["model"] for r in part["per_model"]],
                      {(r["model"], r["subset"]): r for r in part["per_subset"]},
                      {r["model"]: r["fisher_p"] for r in part["contrast"]}, contrast_names(report),
                      value="flagged_share", ylabel="items flagged as peaked (%)")
