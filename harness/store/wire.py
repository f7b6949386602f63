"""A query's result as it travels from the store host to a reader in another process, and back
into the values (and DataFrame) a direct connection would have given.

The host sends the column names, DuckDB's type of each column and the rows as JSON (the standard
library's: exact floats, NaN, integers past 64 bits), each value DuckDB hands Python that JSON
lacks written as text that DuckDB casts back (timestamps, decimals, blobs, intervals, UUIDs).
The reader has an in-memory DuckDB cast every column back to its type, so ``fetchall`` and
``df`` give what they give on the store itself. A nested column that cannot be cast back (a MAP)
keeps its JSON values.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb

from contam.harness.declare import flag_of
from contam.harness.errors import UserError
from contam.harness.jobs.options.store_tools import SqlOptions

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Result", "ResultTooLarge", "encode_result", "decode_result", "result_frame", "encode_json", "decode_json"]

_thread = threading.local()
# Types whose Python values JSON carries exactly: no cast back needed for rows.
_JSON_TYPES = frozenset({
    "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
    "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "VARCHAR", "JSON", '"NULL"'})


@dataclass(frozen=True)
class Result:
    """A query's result: names, DuckDB type names, rows (tuples of JSON values until decoded)."""

    columns: list[str]
    types: list[str]
    rows: list[tuple]

    def dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row)) for row in self.rows]


class ResultTooLarge(UserError):
    """A result past the rows or bytes a store host sends (:func:`encode_result`)."""


def encode_result(cursor: duckdb.DuckDBPyConnection, *, max_rows: int | None = None,
                  max_bytes: int | None = None) -> bytes:
    """The result of the statement just executed on ``cursor``, fetched, as JSON bytes. Fetched
    and encoded a chunk at a time, so that a result past ``max_rows`` rows or ``max_bytes``
    bytes is refused (:class:`ResultTooLarge`) before it is held whole."""
    description = cursor.description or []
    head = encode_json({"columns": [d[0] for d in description],
                        "types": [str(d[1]) for d in description]})[:-1]
    parts, rows, size, asked = [], 0, 0, _FIRST_CHUNK_ROWS
    while chunk := cursor.fetchmany(asked):
        encoded = encode_json(chunk)[1:-1]  # the rows without the list's brackets
        rows, size = rows + len(chunk), size + len(encoded)
        asked = _next_chunk_rows(len(chunk), len(encoded))
        if (max_rows is not None and rows > max_rows) or (max_bytes is not None and size > max_bytes):
            raise ResultTooLarge(f"refused: the result is larger than a running job serves "
                                 f"(more than {max_rows:,} rows or {(max_bytes or 0) >> 20} MiB); "
                                 "narrow the query (WHERE, LIMIT, an aggregate), or read it once "
                                 f"the job has finished, when `contam sql {flag_of(SqlOptions, 'format')} "
                                 "csv` (or DuckDB's "
                                 "COPY) reads the store directly")
        parts.append(encoded)
    return head + b', "rows": [' + b", ".join(parts) + b"]}"


_CHUNK_ROWS = 10_000  # rows fetched at a time at most
_FIRST_CHUNK_ROWS = 64  # until the rows' size is known: a row may be megabytes
_CHUNK_BYTES = 1 << 20  # what a chunk aims at, so the cap is seen within a megabyte or so


def _next_chunk_rows(rows: int, size: int) -> int:
    """How many rows to fetch next for about _CHUNK_BYTES, by the size of the rows just fetched:
    a result of large rows is counted a few at a time, never ten thousand (gigabytes) at once."""
    return max(1, min(_CHUNK_ROWS, rows * _CHUNK_BYTES // max(size, 1)))


def encode_json(value: Any) -> bytes:
    return json.dumps(value, default=_as_text, ensure_ascii=False).encode("utf-8")


def decode_json(body: bytes) -> Any:
    return json.loads(body)


def decode_result(body: bytes) -> Result:
    """Rows with the Python values a direct connection's ``fetchall`` gives."""
    raw = decode_json(body)
    columns, types, rows = raw["columns"], raw["types"], raw["rows"]
    if all(_json_exact(kind) for kind in types):
        return Result(columns, types, [tuple(row) for row in rows])
    values = [[row[i] for row in rows] for i in range(len(columns))]
    typed = [column if _json_exact(kind) else _cast(column, kind)
             for column, kind in zip(values, types)]
    return Result(columns, types, list(zip(*typed)))


def result_frame(body: bytes) -> "pd.DataFrame":
    """The result as the DataFrame a direct connection's ``df()`` gives (DuckDB's dtypes)."""
    raw = decode_json(body)
    columns, types, rows = raw["columns"], raw["types"], raw["rows"]
    casts = ", ".join(f"CAST(unnest(${n}) AS {kind}) AS c{n}"
                      for n, kind in enumerate(types, start=1))
    values = [[row[i] for row in rows] for i in range(len(columns))]
    try:
        frame = _local().execute(f"SELECT {casts}", values).df()
    except duckdb.Error:  # a column that cannot be cast back (a MAP): its JSON values
        import pandas as pd

        frame = pd.DataFrame(decode_result(body).rows, columns=range(len(columns)))
    frame.columns = columns
    return frame


def _json_exact(kind: str) -> bool:
    return kind.removesuffix("[]") in _JSON_TYPES if kind.count("[]") <= 1 else False


def _local() -> duckdb.DuckDBPyConnection:
    """This thread's in-memory DuckDB, which does the casting (opening one costs ~50 ms)."""
    if not hasattr(_thread, "con"):
        _thread.con = duckdb.connect()
    return _thread.con


def _cast(column: Sequence[Any], kind: str) -> list[Any]:
    try:
        return [row[0] for row in _local().execute(f"SELECT CAST(unnest($1) AS {kind})",
                                                   [list(column)]).fetchall()]
    except duckdb.Error:  # nested values DuckDB reads back otherwise (a MAP): as JSON gave them
        return list(column)


def _as_text(value: Any) -> Any:
    """What JSON lacks, in a form DuckDB casts back to the column's type."""
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return f"{value.days} days {value.seconds} seconds {value.microseconds} microseconds"
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\x{b:02X}" for b in bytes(value))
    raise TypeError(f"{type(value).__name__} cannot travel from the store host")
