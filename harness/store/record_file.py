"""One file a user brings (CSV, JSONL or Parquet), read once: its records and its sha256.

The reader is chosen by the file's suffix; an unknown suffix is refused before anything is read.
A CSV or JSONL file is hashed as it is parsed, in one pass, so a file without end (``/dev/urandom``
behind a ``.jsonl`` name) is refused at its first bad line instead of hashed for ever. A Parquet
file is read by DuckDB, which needs a regular file, and hashed after its rows were read.
See docs/how-to/items.md, "Files you bring".
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

from contam.harness.errors import InputError
from contam.harness.store.column_map import ColumnMap, parse_column_map
from contam.harness.store.parquet_records import read_parquet_records
from contam.harness.store.records import KINDS, FileKind, Record, check_values
from contam.harness.store.records import read_records as read_text_records

__all__ = ["RecordFile", "KINDS", "read_records", "parse_column_map"]

_CHUNK = 1 << 20


class RecordFile:
    """Iterate once for the validated records; then :meth:`sha256` is the file's digest."""

    def __init__(self, path: str | Path, kind: FileKind, columns: ColumnMap | None = None) -> None:
        self.path, self.kind = Path(path), kind
        self.columns = columns or ColumnMap()
        self.parquet = self.path.suffix.lower() == ".parquet"
        self._digest = hashlib.sha256()
        self._done = False
        if not self.parquet:  # an unknown suffix is refused now, before any byte is read
            self._records = read_text_records(self.path, kind, self.columns, digest=self._digest)

    def __iter__(self) -> Iterator[Record]:
        if self.parquet:
            yield from self._parquet_records()
        else:
            yield from self._records
        self._done = True

    def sha256(self) -> str:
        if not self._done:
            raise RuntimeError("sha256() before the file was read to its end")
        return self._digest.hexdigest()

    def _parquet_records(self) -> Iterator[Record]:
        if not self.path.is_file():
            raise InputError(str(self.path), None, "no such file" if not self.path.exists()
                             else "not a regular file")
        for record in read_parquet_records(self.path, self.kind, self.columns):
            check_values(self.path, self.kind, record)
            yield record
        with self.path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                self._digest.update(chunk)


def read_records(path: str | Path, kind: FileKind,
                 columns: ColumnMap | None = None) -> Iterator[Record]:
    """Every validated record of a CSV, JSONL or Parquet file (an unknown suffix is refused at
    once); for readers that need no digest, such as the emulator's knowledge."""
    return iter(RecordFile(path, kind, columns))
