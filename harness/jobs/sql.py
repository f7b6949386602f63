"""`contam sql`: a read-only query on the store, as a table, CSV or JSON."""

from __future__ import annotations

import argparse
import csv
import sys
from typing import Any

import duckdb
import orjson

from harness.errors import UserError
from harness.store import Store

__all__ = ["sql_command", "run_query"]


def sql_command(args: argparse.Namespace) -> int:
    with Store(args.store, read_only=True) as store:
        columns, rows = run_query(store, args.query)
    _PRINTERS[args.format](columns, rows)
    return 0


def run_query(store: Store, query: str) -> tuple[list[str], list[tuple]]:
    try:
        cursor = store.con.execute(query)
        if cursor.description is None:
            return [], []
        return [d[0] for d in cursor.description], cursor.fetchall()
    except duckdb.Error as exc:
        raise UserError(f"query failed: {str(exc).splitlines()[0]}") from None


def _print_table(columns: list[str], rows: list[tuple]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(*columns, show_lines=False)
    for row in rows:
        table.add_row(*("NULL" if v is None else str(v) for v in row))
    Console().print(table)
    print(f"{len(rows)} row{'s' if len(rows) != 1 else ''}", file=sys.stderr)


def _print_csv(columns: list[str], rows: list[tuple]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)


def _print_json(columns: list[str], rows: list[tuple]) -> None:
    records = [dict(zip(columns, row)) for row in rows]
    sys.stdout.write(orjson.dumps(records, default=_jsonable, option=orjson.OPT_INDENT_2).decode())
    sys.stdout.write("\n")


def _jsonable(value: Any) -> Any:
    return str(value)  # Decimals, UUIDs, intervals: their text form


_PRINTERS = {"table": _print_table, "csv": _print_csv, "json": _print_json}
