"""`contam sql`: one read-only query on the store, as a table, CSV or JSON.

Read-only in every sense, not only for the store file: the query must parse as exactly one
read-only statement, and it can read or write no other file (``COPY``, ``EXPORT``, ``ATTACH``,
``read_csv``, ``glob``) and reach no network (``INSTALL``). That holds whether the store is
opened here or read through the job that holds it; :mod:`harness.store.readonly` says how.

Table output shows values as text, never as rich markup, with control and bidi characters
escaped (``\\x1b``, ``\\u202e``) so that what a model answered cannot restyle or rewrite the
terminal.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import orjson

from harness.errors import UserError
from harness.store import DEFAULT_STORE
from harness.store.access import Reader, reading
from harness.text import visible

__all__ = ["sql", "run_query", "visible", "QueryResult"]


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple]

    def text(self, fmt: str = "table", width: int | None = None) -> str:
        """The rows as a rich table (fitted to a terminal ``width``; without one, at its natural
        width, so that no value is ever cut), CSV or JSON."""
        if fmt == "table":
            return _table(self.columns, self.rows, width)
        return _FORMATTERS[fmt](self.columns, self.rows)

    def count_line(self) -> str:
        return f"{len(self.rows)} row{'s' if len(self.rows) != 1 else ''}"


def sql(query: str, *, store: str | Path = DEFAULT_STORE) -> QueryResult:
    """``contam sql``: ``query`` on the store, read-only (through the job holding it, if one does)."""
    with reading(store) as opened:
        return QueryResult(*run_query(opened, query))


def run_query(store: Reader, query: str) -> tuple[list[str], list[tuple]]:
    """The query's columns and rows under `contam sql`'s rule; refusals and errors as UserError."""
    try:
        return store.checked_query(query)
    except duckdb.Error as exc:  # DuckDB's whole message: its "Did you mean" hint and caret line
        raise UserError(f"query failed: {exc}") from None
    except RuntimeError as exc:  # DuckDB's answer to Ctrl-C: the CLI's one "interrupted" line
        if "interrupted" in str(exc).lower():
            raise KeyboardInterrupt from None
        raise


def _table(columns: list[str], rows: list[tuple], width: int | None = None) -> str:
    """A rich table: on a terminal, ``width`` wide with long values wrapped (never cut with
    "…"); into a pipe or a file (no ``width``), as wide as its widest values need."""
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    table = Table(show_lines=False)
    for name in columns:
        table.add_column(Text(visible(name)), overflow="fold")
    for row in rows:
        table.add_row(*(Text("NULL" if v is None else visible(str(v))) for v in row))
    console = Console(emoji=False, highlight=False, width=width or _NATURAL, color_system=None)
    if width is None:  # no wider than the table needs: no trailing blanks
        console.width = Measurement.get(console, console.options, table).maximum
    with console.capture() as captured:
        console.print(table)
    return captured.get()


_NATURAL = 1_000_000  # columns: wide enough for any value on one line


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


_FORMATTERS = {"csv": _csv, "json": _json}
