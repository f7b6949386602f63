"""`contam sql`: one read-only query on the store, as a table, CSV or JSON.

Read-only in every sense, not only for the store file: the store is opened read-only, then
DuckDB's file and network access is switched off and its configuration locked, so no query can
read or write another file (``COPY``, ``EXPORT``, ``ATTACH``, ``read_csv``, ``glob``) or reach the
network (``INSTALL``). Before any of that is tried, the text must parse as exactly one query
(``SELECT``, ``WITH``, ``DESCRIBE``, ``SHOW``, ``SUMMARIZE`` (all SELECTs to DuckDB's parser) or an
``EXPLAIN`` of one).

Table output shows values as text, never as rich markup, with control and bidi characters
escaped (``\\x1b``, ``\\u202e``) so that what a model answered cannot restyle or rewrite the
terminal.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import orjson

from harness.errors import UserError
from harness.store import DEFAULT_STORE, Store
from harness.text import visible

__all__ = ["sql", "run_query", "check_query", "visible", "QueryResult"]

_EXPLAIN = re.compile(r"^\s*explain\s+(?:analyze\s+)?(?:\([^)]*\)\s*)?", re.IGNORECASE)
_LOCKDOWN = ("SET enable_external_access = false", "SET lock_configuration = true")


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple]

    def text(self, fmt: str = "table") -> str:
        """The rows as a rich table, CSV or JSON."""
        return _FORMATTERS[fmt](self.columns, self.rows)

    def count_line(self) -> str:
        return f"{len(self.rows)} row{'s' if len(self.rows) != 1 else ''}"


def sql(query: str, *, store: str | Path = DEFAULT_STORE) -> QueryResult:
    """``contam sql``: ``query`` on the store, opened read-only."""
    with Store(store, read_only=True) as opened:
        return QueryResult(*run_query(opened, query))


def run_query(store: Store, query: str) -> tuple[list[str], list[tuple]]:
    """The query's columns and rows, run under the lockdown; refusals and errors as UserError."""
    check_query(store.con, query)
    try:
        for setting in _LOCKDOWN:
            store.con.execute(setting)
        cursor = store.con.execute(query)
        if cursor.description is None:
            return [], []
        return [d[0] for d in cursor.description], cursor.fetchall()
    except duckdb.Error as exc:  # DuckDB's whole message: its "Did you mean" hint and caret line
        raise UserError(f"query failed: {exc}") from None


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


def _parse(con: duckdb.DuckDBPyConnection, query: str) -> list[Any]:
    try:
        return con.extract_statements(query)
    except duckdb.Error as exc:
        raise UserError(f"query failed: {exc}") from None


def _explained(con: duckdb.DuckDBPyConnection, query: str) -> Any:
    """The kind of statement an EXPLAIN wraps (EXPLAIN ANALYZE runs it), None if unclear."""
    inner = _parse(con, _EXPLAIN.sub("", query, count=1))
    return inner[0].type if len(inner) == 1 else None


def _table(columns: list[str], rows: list[tuple]) -> str:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(show_lines=False)
    for name in columns:
        table.add_column(Text(visible(name)))
    for row in rows:
        table.add_row(*(Text("NULL" if v is None else visible(str(v))) for v in row))
    console = Console(emoji=False, highlight=False)
    with console.capture() as captured:
        console.print(table)
    return captured.get()


def _csv(columns: list[str], rows: list[tuple]) -> str:
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return text.getvalue()


def _json(columns: list[str], rows: list[tuple]) -> str:
    records = [dict(zip(columns, row)) for row in rows]
    return orjson.dumps(records, default=_jsonable, option=orjson.OPT_INDENT_2).decode() + "\n"


def _jsonable(value: Any) -> Any:
    return str(value)  # Decimals, UUIDs, intervals: their text form


_FORMATTERS = {"table": _table, "csv": _csv, "json": _json}
