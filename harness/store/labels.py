"""Labels appended from outside a job (``contam view``'s raters): one transaction per call,
committed when it returns, on whichever connection reaches the store: a writer of the caller's
own, or a cursor of the process that holds the store (:mod:`contam.harness.store.host`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import duckdb

from contam.harness.errors import UserError, first_line
from contam.harness.store.store import Store, insert_statement, transaction, utc_now

__all__ = ["append_label_rows", "append_labels_to"]


def append_labels_to(store: Store, rows: Sequence[Mapping[str, Any]], table: str = "labels") -> int:
    """:func:`append_label_rows` on an open store's own connection (the view's kept writer)."""
    return append_label_rows(store.con, rows, table)


_TABLES = ("labels", "label_sessions")  # a rater's labels, and the seed that orders their cells


def append_label_rows(con: duckdb.DuckDBPyConnection, rows: Sequence[Mapping[str, Any]],
                      table: str = "labels") -> int:
    """Insert ``labels`` (or ``label_sessions``) rows (dicts keyed by column; ``created_at`` now
    where missing) in one transaction of ``con``; a refused row (unknown column, missing rater)
    refuses them all."""
    if table not in _TABLES:
        raise UserError(f"{table}: only {' and '.join(_TABLES)} rows are appended from outside a job")
    if not rows:
        return 0
    now = utc_now()
    stamped = [{"created_at": now, **row} for row in rows]
    try:
        statement = insert_statement(table, stamped)
    except ValueError as exc:  # unknown columns
        raise UserError(f"{table} refused: {exc}") from None
    try:
        with transaction(con):
            con.execute(*statement)
    except duckdb.Error as exc:
        raise UserError(f"{table} refused: {first_line(exc)}") from None
    return len(stamped)
