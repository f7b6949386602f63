"""DuckDB's memory limit read and put back on a connection: the one place both the store's own
lowered limits (:meth:`contam.harness.store.store.Store.memory_limit`) and a job's bounded work
(:mod:`contam.harness.store.memory`) go through."""

from __future__ import annotations

import duckdb

__all__ = ["current_limit", "lower_limit", "put_back_limit"]


def current_limit(con: duckdb.DuckDBPyConnection) -> str:
    """The limit in DuckDB's words ("18.8 GiB", "61.0 MiB")."""
    return con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]


def lower_limit(con: duckdb.DuckDBPyConnection, limit: str, *, if_possible: bool = False) -> bool:
    """Set the limit to ``limit``; where DuckDB cannot free enough to have it now (blocks another
    thread's read holds), it keeps the one it had: then False with ``if_possible``, else raised."""
    try:
        con.execute(f"SET memory_limit = '{limit}'")
    except duckdb.OutOfMemoryException:
        if not if_possible:
            raise
        return False
    return True


def put_back_limit(con: duckdb.DuckDBPyConnection, previous: str) -> None:
    """The limit as it was. DuckDB's words for a limit round down (set again, "18.8 GiB" reads
    "18.7 GiB"): set by them at every commit, its default wore down commit after commit. The
    default comes back exactly by RESET; only a limit a caller had set is set again by its words
    (which settle within a few rounds, a few tenths of their unit lower)."""
    con.execute("RESET memory_limit")
    if current_limit(con) != previous:
        con.execute(f"SET memory_limit = '{previous}'")
