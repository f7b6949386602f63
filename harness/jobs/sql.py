"""`contam sql`: a read-only query on the store, as a table, CSV or JSON."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import orjson

from harness.errors import UserError
from harness.store import DEFAULT_STORE, Store

__all__ = ["sql", "run_query", "QueryResult"]


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
    try:
        cursor = store.con.execute(query)
        if cursor.description is None:
            return [], []
        return [d[0] for d in cursor.description], cursor.fetchall()
    except duckdb.Error as exc:
        raise UserError(f"query failed: {str(exc).splitlines()[0]}") from None


def _table(columns: list[str], rows: list[tuple]) -> str:
    from rich.console import Console
    from rich.table import Table

    table = Table(*columns, show_lines=False)
    for row in rows:
        table.add_row(*("NULL" if v is None else str(v) for v in row))
    console = Console()
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
