"""How `contam sql` writes a result, while its rows are fetched.

CSV and JSON write every row a chunk at a time (memory stays flat however many there are). The
table shows the first ``max_rows`` rows (a million-row table is useless on a screen and takes
minutes to lay out) and counts the rest, and its footer says how to get them all. Table output
shows values as text, never as rich markup, with control and bidi characters escaped
(``\\x1b``, ``\\u202e``) so that what a model answered cannot restyle or rewrite the terminal.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

import orjson

from contam.harness.declare import flag_of
from contam.harness.jobs.options.store_tools import TABLE_ROWS, SqlOptions
from contam.harness.text import visible

__all__ = ["Printed", "write_rows", "TABLE_ROWS", "visible"]


@dataclass(frozen=True)
class Printed:
    """What was written: every row, of which the table showed ``shown`` (None: csv or json)."""

    rows: int
    shown: int | None = None

    def footer(self) -> str:
        """The table's line for stderr: the count, and how to get the rows it left out."""
        counted = f"{self.rows:,} row{'s' if self.rows != 1 else ''}"
        if self.shown is None or self.shown >= self.rows:
            return counted
        return f"{counted}, {self.shown:,} shown: {flag_of(SqlOptions, 'format')} csv for all"


def write_rows(fmt: str, columns: list[str], chunks: Iterator[list[tuple]], out: TextIO, *,
               max_rows: int = 0, width: int | None = None) -> Printed:
    """The rows to ``out`` as a table (its first ``max_rows``; 0: all; fitted to a terminal
    ``width``, or at its natural width, never cutting a value), CSV or JSON."""
    return _WRITERS[fmt](columns, chunks, out, max_rows=max_rows, width=width)


def _table(columns: list[str], chunks: Iterator[list[tuple]], out: TextIO, *, max_rows: int,
           width: int | None) -> Printed:
    shown: list[tuple] = []
    total = 0
    for chunk in chunks:
        total += len(chunk)
        room = max_rows - len(shown) if max_rows else len(chunk)
        shown.extend(chunk[:room])
    out.write(_rich_table(columns, shown, width))
    return Printed(total, len(shown))


def _csv(columns: list[str], chunks: Iterator[list[tuple]], out: TextIO, **_: Any) -> Printed:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    total = 0
    for chunk in chunks:
        writer.writerows(chunk)
        total += len(chunk)
    return Printed(total)


def _json(columns: list[str], chunks: Iterator[list[tuple]], out: TextIO, **_: Any) -> Printed:
    """The same text as one indented JSON list of objects, written an object at a time."""
    total = 0
    out.write("[")
    for chunk in chunks:
        for row in chunk:
            record = orjson.dumps(dict(zip(columns, row)), default=str, option=orjson.OPT_INDENT_2)
            out.write(("\n  " if not total else ",\n  ") + record.decode().replace("\n", "\n  "))
            total += 1
    out.write("\n]\n" if total else "]\n")
    return Printed(total)


def _rich_table(columns: list[str], rows: list[tuple], width: int | None) -> str:
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


_WRITERS: dict[str, Callable[..., Printed]] = {"table": _table, "csv": _csv, "json": _json}
