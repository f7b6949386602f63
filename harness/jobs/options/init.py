"""The options of `contam init`."""

from __future__ import annotations

from dataclasses import dataclass

from contam.harness.declare import option

__all__ = ["InitOptions"]


@dataclass(frozen=True, kw_only=True)
class InitOptions:
    """``contam.harness.jobs.init.init_study``'s keyword arguments, by the same names (the folder is
    the command's positional)."""

    items: str | None = option(
        "--items", metavar="FILE",
        help="your items file (CSV, JSONL or Parquet): the study.toml reads it, its column map "
             "guessed from the names; no items.csv is written")
    metrics: str | None = option(
        "--metrics", metavar="METRIC[,METRIC]",
        help="[scoring] metrics (default: bleu2,bertscore_f1); with exact, the system prompt asks "
             "for the answer alone")
