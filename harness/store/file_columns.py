"""An items file's columns and what each holds (text, number or date), as DuckDB reads them:
``contam init --items FILE`` writes a study.toml from them (the column map, the template, the
exposure and release-date candidates). CSV, JSONL and Parquet, like ``contam import``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from contam.harness.errors import UserError

__all__ = ["FileColumn", "file_columns"]

_READERS = {".csv": "read_csv_auto", ".jsonl": "read_json_auto", ".parquet": "read_parquet"}
_NUMBER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE",
                 "DECIMAL", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")


@dataclass(frozen=True)
class FileColumn:
    name: str
    holds: str  # "number", "date", "text" or "other"
    values: tuple[str, ...] = ()  # up to a dozen distinct values, for a text column


def file_columns(path: Path) -> list[FileColumn]:
    """The columns of the items file at ``path``, in file order; an unreadable file or an
    unknown type is refused in one line naming it."""
    reader = _READERS.get(path.suffix.lower())
    if reader is None:
        raise UserError(f"{path}: not a CSV, JSONL or Parquet file (by its name)")
    try:
        with duckdb.connect() as con:
            relation = con.sql(f"SELECT * FROM {reader}(?)", params=[str(path)])
            return [_column(relation, name, str(kind))
                    for name, kind in zip(relation.columns, relation.types)]
    except duckdb.Error as exc:
        raise UserError(f"{path}: cannot read its columns ({str(exc).splitlines()[0]})") from None


def _column(relation: duckdb.DuckDBPyRelation, name: str, kind: str) -> FileColumn:
    if kind.split("(")[0] in _NUMBER_TYPES:
        return FileColumn(name, "number")
    if kind == "DATE" or kind.startswith("TIMESTAMP"):
        return FileColumn(name, "date")
    if kind != "VARCHAR":
        return FileColumn(name, "other")
    quoted = '"' + name.replace('"', '""') + '"'
    rows = relation.query("t", f"SELECT DISTINCT {quoted} FROM t WHERE {quoted} IS NOT NULL "
                               f"ORDER BY 1 LIMIT 13").fetchall()
    return FileColumn(name, "text", tuple(row[0] for row in rows))
