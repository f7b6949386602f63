"""Reading a Parquet file of items, answers or labels, by the rules of :mod:`contam.harness.store.records`.

DuckDB reads Parquet itself (no other dependency), a batch of rows at a time, so memory stays flat.
A record's "line" is its 1-based row. The columns contam reads as text (``item_id``,
``question``, ...) must hold scalars: a nested column (a list, struct, map or union) or bytes
there is refused in one line before any row is read. Extra columns keep their types (numbers stay
numbers, lists stay lists) in ``items.extra``. See README.md, "Files you bring".
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb

from contam.harness.errors import InputError, first_line
from contam.harness.store.column_map import MAP_FLAG, ColumnMap
from contam.harness.store.records import FileKind, Record, as_text, complete, require_columns

__all__ = ["read_parquet_records"]

_BATCH_ROWS = 2048
_NESTED = ("STRUCT", "MAP", "UNION", "LIST")  # plus any type ending in [] or [N] (lists, arrays)


def read_parquet_records(path: Path, kind: FileKind, columns: ColumnMap) -> Iterator[Record]:
    """Every row of the file as a record (not yet checked for blanks or control characters)."""
    con = duckdb.connect()
    try:
        names, types = _schema(con, path)
        names = columns.rename(str(path), None, names)
        require_columns(path, None, names, kind)
        _refuse_nested_text(path, kind, names, types)
        yield from _rows(con, path, names, kind)
    finally:
        con.close()


def _schema(con: duckdb.DuckDBPyConnection, path: Path) -> tuple[list[str], list[str]]:
    try:
        described = con.execute("DESCRIBE SELECT * FROM read_parquet($path)",
                                {"path": str(path)}).fetchall()
    except duckdb.Error as exc:
        raise _unreadable(path, exc) from None
    return [row[0] for row in described], [str(row[1]) for row in described]


def _refuse_nested_text(path: Path, kind: FileKind, names: list[str], types: list[str]) -> None:
    for name, type_ in zip(names, types):
        if name in kind.required and (_is_nested(type_) or type_ == "BLOB"):
            raise InputError(str(path), None, f"column {name!r} is {type_}, but contam reads "
                             f"{name} as text: flatten it or {MAP_FLAG} another column onto it")


def _is_nested(type_: str) -> bool:
    return type_.startswith(_NESTED) or type_.endswith("]")


def _rows(con: duckdb.DuckDBPyConnection, path: Path, names: list[str],
          kind: FileKind) -> Iterator[Record]:
    try:
        con.execute("SELECT * FROM read_parquet($path)", {"path": str(path)})
        row_number = 0
        while batch := con.fetchmany(_BATCH_ROWS):
            for row in batch:
                row_number += 1
                values = {name: _json_value(value) for name, value in zip(names, row)}
                yield Record(row_number, complete({k: as_text(v) for k, v in values.items()}, kind),
                             values)
    except duckdb.Error as exc:
        raise _unreadable(path, exc) from None


def _unreadable(path: Path, exc: duckdb.Error) -> InputError:
    return InputError(str(path), None, f"not a readable Parquet file ({first_line(exc)})")


def _json_value(value: Any) -> Any:
    """A Parquet value as JSON can hold it: numbers, text, booleans, lists and objects as they
    are; decimals as numbers; dates and times as ISO text; bytes as hex."""
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return value
