"""The options of the commands that only read or fill a store: `contam import`, `contam batches`
and `contam sql` (their positional arguments are the command line's own)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.declare import option

__all__ = ["ImportOptions", "BatchesOptions", "SqlOptions"]


@dataclass(frozen=True, kw_only=True)
class ImportOptions:
    """``harness.api.import_path``'s keywords beside the store."""

    column_map: str | None = option(
        "--map", metavar="CONTAM=FILE[,...]",
        help="the file's column names onto contam's, e.g. "
             "item_id=id,question=prompt,reference=answer,subset=tier")


@dataclass(frozen=True, kw_only=True)
class BatchesOptions:
    """``harness.api.list_batches``'s keywords beside the store."""

    provider_jobs: bool = option(
        "--provider-jobs", default=False, action="store_true",
        help="also list the providers' jobs tagged by contam that the store lacks (a job "
             "created in the instant before a kill)")


@dataclass(frozen=True, kw_only=True)
class SqlOptions:
    """How `contam sql` prints the result (``harness.api.sql`` returns it unprinted)."""

    format: str = option("--format", default="table", choices=("table", "csv", "json"),
                         help="how the rows are printed (default table)")
