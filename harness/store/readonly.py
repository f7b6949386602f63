"""`contam sql`'s rule for a query a user typed: exactly one read-only statement, and no file or
network access, whichever way it reaches the store.

- On a read-only connection of its own (:meth:`Store.checked_query`), DuckDB's file and network
  access is switched off and its configuration locked (:data:`LOCKDOWN`).
- Through the host of a process that holds the store for writing (:mod:`contam.harness.store.host`),
  that process's database has had file and network access switched off when the host started
  (:func:`close_external_access`); each query runs in a ``READ ONLY`` transaction of a cursor of
  its own, so nothing it calls can write (``nextval``); and a query calling a table function
  that acts on the database itself (``checkpoint()``) is refused.

Either way the text must first parse as exactly one query (``SELECT``, ``WITH``, ``DESCRIBE``,
``SHOW``, ``SUMMARIZE`` (all SELECTs to DuckDB's parser) or an ``EXPLAIN`` of one).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import duckdb
import orjson

from contam.harness.errors import UserError

__all__ = ["check_query", "refuse_side_effects", "LOCKDOWN", "close_external_access",
           "READ_ONLY_BEGIN"]

_EXPLAIN = re.compile(r"^\s*explain\s+(?:analyze\s+)?(?:\([^)]*\)\s*)?", re.IGNORECASE)
LOCKDOWN = ("SET enable_external_access = false", "SET lock_configuration = true")
READ_ONLY_BEGIN = "BEGIN TRANSACTION READ ONLY"
# Table functions that act on the database rather than read it: allowed on a read-only
# connection (where they do nothing) but not on the cursor of a process that writes.
_ACTING = frozenset({"checkpoint", "force_checkpoint"})


def check_query(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Exactly one statement, and a read-only kind, by DuckDB's own parser."""
    statements = _parse(con, query)
    if len(statements) != 1:
        raise UserError(f"refused: give exactly one SQL statement (got {len(statements)})")
    kind = statements[0].type
    if kind == duckdb.StatementType.EXPLAIN:
        kind = _explained(con, statements[0].query)
    if kind != duckdb.StatementType.SELECT:
        name = kind.name if kind is not None else "this"
        raise UserError(f"refused: {name} statements are not allowed; `contam sql` is read-only "
                        "(SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE, or EXPLAIN of one)")


def refuse_side_effects(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Refuse a checked query (:func:`check_query`) that calls a table function acting on the
    database, found in the syntax tree DuckDB's parser gives (``json_serialize_sql``)."""
    tree = _syntax_tree(con, _EXPLAIN.sub("", query, count=1))
    acting = sorted(_ACTING & set(_table_functions(tree)))
    if acting:
        raise UserError(f"refused: {acting[0]}() acts on the store; `contam sql` is read-only")


def close_external_access(con: duckdb.DuckDBPyConnection) -> None:
    """Switch off file and network access for every connection to ``con``'s database, for as
    long as it stays open (it cannot be switched on again)."""
    con.execute(LOCKDOWN[0])


def _syntax_tree(con: duckdb.DuckDBPyConnection, query: str) -> dict[str, Any]:
    text = con.execute("SELECT json_serialize_sql($1)", [query]).fetchone()[0]
    tree = orjson.loads(text)
    if tree.get("error"):  # not serialisable: refused rather than run unexamined
        raise UserError(f"refused: {tree.get('error_message', 'the query cannot be examined')}")
    return tree


def _table_functions(node: Any) -> Iterator[str]:
    """The name of every table function anywhere in a serialised syntax tree."""
    if isinstance(node, dict):
        if node.get("type") == "TABLE_FUNCTION":
            yield str(node.get("function", {}).get("function_name", "")).lower()
        for value in node.values():
            yield from _table_functions(value)
    elif isinstance(node, list):
        for value in node:
            yield from _table_functions(value)


def _parse(con: duckdb.DuckDBPyConnection, query: str) -> list[Any]:
    try:
        return con.extract_statements(query)
    except duckdb.Error as exc:
        raise UserError(f"query failed: {exc}") from None


def _explained(con: duckdb.DuckDBPyConnection, query: str) -> Any:
    """The kind of statement an EXPLAIN wraps (EXPLAIN ANALYZE runs it), None if unclear."""
    inner = _parse(con, _EXPLAIN.sub("", query, count=1))
    return inner[0].type if len(inner) == 1 else None
