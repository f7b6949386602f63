"""The options of `contam report`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contam.harness.declare import option

__all__ = ["ReportOptions"]


@dataclass(frozen=True, kw_only=True)
class ReportOptions:
    """``contam report``'s options (``contam.harness.api.report`` takes them as keywords too)."""

    out: str | Path | None = option(
        "--out", help="folder for report.json/md/html and figures (default: <store>_report/ "
                      "beside the store; with --format alone nothing is written)")
    format: str | None = option("--format", choices=("json", "md", "html"),
                                help="print this one format to stdout instead of writing a folder")
    contrast: str | None = option(
        "--contrast", help="documented,undocumented subsets (default: the first and last of the "
                           "study's [study] subsets, else official,fan where the store has both, else none)")
    judge: str | None = option("--judge", help="judge rater, e.g. judge:claude-sonnet-5")
    human: str | None = option(
        "--human", help="human rater (default: the one that labelled the most cells)")
    correct: str | None = option(  # else [study] correct, else the default (contam.metrics.outcome)
        "--correct", metavar="OUTCOME",
        help="what makes an answer correct: labels, a rule metric (exact, contains, ...) or a "
             "graded one with a threshold ('bleu2 >= 0.5') (default: the study's [study] correct, "
             "else labels where the store has them, else the first rule metric of [scoring] "
             "metrics)")
    by: str | None = option(  # an item column to break accuracy down by
        "--by", metavar="COLUMN",
        help="break accuracy down by an item column: title, subset, ... or one of the items' own "
             "extra columns")
    figure_titles: bool = option(
        "--figure-titles", default=False, action="store_true",
        help="draw each figure's title inside it (default: none; the captions carry them)")
    config: str | Path | None = option(  # else the newest run's record (report.inputs.study_settings)
        "--config", help="the study's config: its [study] exposure, released, subsets and "
                         "[[models]] cutoff (default: what the newest contam run recorded)")
