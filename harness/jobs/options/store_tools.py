"""The options of the commands that only read or fill a store: `contam import`, `contam batches`
and `contam sql` (their positional arguments are the command line's own)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from contam.harness.declare import option

__all__ = ["ImportOptions", "BatchesOptions", "SqlOptions", "TABLE_ROWS"]


@dataclass(frozen=True, kw_only=True)
class ImportOptions:
    """``contam.harness.api.import_path``'s keywords beside the store."""

    column_map: str | None = option(
        "--map", metavar="CONTAM=FILE[,...]",
        help="the file's column names onto contam's, e.g. "
             "item_id=id,question=prompt,reference=answer,subset=tier")


@dataclass(frozen=True, kw_only=True)
class BatchesOptions:
    """``contam.harness.api.list_batches``'s keywords beside the store."""

    provider_jobs: bool = option(
        "--provider-jobs", default=False, action="store_true",
        help="also list the providers' jobs tagged by contam that the store lacks (a job "
             "created in the instant before a kill)")


TABLE_ROWS = 40  # rows the table shows unless --max-rows says otherwise


def _rows_shown(text: str) -> int:
    """--max-rows: a whole number, 0 or more."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"a whole number of rows, 0 or more (0: all), not {text!r}")
    return int(text)


@dataclass(frozen=True, kw_only=True)
class SqlOptions:
    """How `contam sql` prints the result (``contam.harness.api.sql`` returns it unprinted)."""

    format: str = option("--format", default="table", choices=("table", "csv", "json"),
                         help="table (the default: its first --max-rows rows), or csv or json "
                              "(every row, written as it is fetched)")
    max_rows: int = option("--max-rows", default=TABLE_ROWS, type=_rows_shown, metavar="N",
                           help=f"rows the table shows, the rest counted (default {TABLE_ROWS}; "
                                "0: all)")
