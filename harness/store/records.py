"""Reading and validating the files users bring: items, answers, labels (CSV or JSONL; Parquet
is :mod:`contam.harness.store.parquet_records`, and :mod:`contam.harness.store.record_file` picks the reader).

Strict by design. The seed paper lost a row to an unquoted comma that shifted every column
(question_id 35): here a row whose field count differs from the header, a missing required column,
invalid UTF-8, a control character (NUL and the other C0 controls but tab, CR and LF), a JSON
object naming one key twice or an unknown label is refused with the file and its 1-based line,
before anything is written. (Duplicate records are the importer's check: it sees every key of a
file at once in the store's staging table.)

Files are read as a stream, a line at a time, so memory does not grow with the file, and no line
may be longer than ``MAX_LINE_BYTES`` (a file without a newline, ``/dev/zero``, is refused at its
first line instead of read without end). Lines end at ``\n`` only: U+2028, U+0085 and the other
characters :meth:`str.splitlines` also breaks at are text inside a JSON string, not line ends.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from contam.harness.errors import InputError
from contam.harness.labels import LABEL_SPELLINGS
from contam.harness.store.column_map import ColumnMap

__all__ = ["FileKind", "KINDS", "Record", "read_records", "normalise_label", "file_sha256",
           "MAX_LINE_BYTES", "check_values", "require_columns", "complete", "as_text"]

# The longest line a file may hold, in bytes, its line end excluded: far beyond any item, answer or
# label, and a bound on what one line may cost.
MAX_LINE_BYTES = 1 << 20


@dataclass(frozen=True)
class FileKind:
    name: str
    required: tuple[str, ...]  # the contam columns every record carries, in table order
    key: tuple[str, ...]
    nonempty: tuple[str, ...]  # required columns that may not be blank
    optional: tuple[str, ...] = ()  # required columns a file may lack (read as blank)


KINDS = {
    "items": FileKind("items", ("item_id", "title", "subset", "question", "reference"),
                      ("item_id",), ("item_id", "question"), optional=("title", "subset")),
    "answers": FileKind("answers", ("item_id", "model", "answer"), ("item_id", "model"),
                        ("item_id", "model")),
    "labels": FileKind("labels", ("item_id", "model", "rater", "label"),
                       ("item_id", "model", "rater"), ("item_id", "model", "rater", "label")),
}

@dataclass(frozen=True)
class Record:
    line: int  # 1-based line (a Parquet file's row) where the record starts
    fields: dict[str, str]  # every column as text, the kind's optional ones included
    values: dict[str, Any] | None = None  # the file's typed values (JSONL, Parquet); None: fields

    @property
    def typed(self) -> dict[str, Any]:
        return self.fields if self.values is None else self.values


def normalise_label(raw: str) -> str | None:
    """`Right`, `Partially Right`, `partially_right`, ` WRONG ` -> right / partial / wrong."""
    words = raw.replace("_", " ").replace("-", " ").lower().split()
    return LABEL_SPELLINGS.get(" ".join(words))


Parse = Callable[[Path, Iterable[str], FileKind, ColumnMap], Iterator[Record]]


def read_records(path: str | Path, kind: FileKind, columns: ColumnMap | None = None, *,
                 digest: Any = None) -> Iterator[Record]:
    """Every record of a CSV or JSONL file, validated as it streams past; raises InputError naming
    file and line (from the first record that fails, so a refused file must be consumed before
    writing). A file of an unknown type is refused at once, before anything is read. ``digest``
    (a hashlib object) is fed every byte read, so one pass both parses and hashes the file."""
    path = Path(path)
    return _records(path, _parser(path), kind, columns or ColumnMap(), digest)


def _records(path: Path, parse: Parse, kind: FileKind, columns: ColumnMap,
             digest: Any) -> Iterator[Record]:
    with _open(path) as handle:
        source = _Hashing(handle, digest) if digest is not None else handle
        for record in parse(path, _lines(path, source), kind, columns):
            check_values(path, kind, record)
            yield record
        if digest is not None:
            while chunk := handle.read(1 << 20):  # bytes after the last record, if any
                digest.update(chunk)


class _Hashing:
    """A binary handle whose every line read also feeds a digest."""

    def __init__(self, handle: BinaryIO, digest: Any) -> None:
        self._handle, self._digest = handle, digest

    def readline(self, limit: int = -1) -> bytes:
        data = self._handle.readline(limit)
        self._digest.update(data)
        return data


def file_sha256(path: str | Path) -> str:
    """The file's sha256, read in chunks; a line longer than ``MAX_LINE_BYTES`` is refused here
    too, so hashing a file without newlines (``/dev/zero``) ends."""
    path, digest = Path(path), hashlib.sha256()
    lines, since_newline = 0, 0  # complete lines so far; bytes since the last newline
    with _open(path) as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            first = chunk.find(b"\n")
            if first >= 0 and since_newline + first > MAX_LINE_BYTES:  # a line ended in this chunk
                raise _too_long(path, lines + 1)
            lines += chunk.count(b"\n")
            since_newline = len(chunk) - chunk.rfind(b"\n") - 1 if first >= 0 else since_newline + len(chunk)
            if since_newline > MAX_LINE_BYTES:  # the open line at the end (no newline to come)
                raise _too_long(path, lines + 1)
    return digest.hexdigest()


def _too_long(path: Path, line: int) -> InputError:
    return InputError(str(path), line, f"line longer than {MAX_LINE_BYTES} bytes")


def _parser(path: Path) -> Parse:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return _parse_csv
    if suffix in (".jsonl", ".ndjson"):
        return _parse_jsonl
    raise InputError(str(path), None, "unknown file type: use .csv, .jsonl or .parquet")


def _open(path: Path):
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise InputError(str(path), None, "no such file") from None
    except OSError as exc:
        raise InputError(str(path), None, exc.strerror or "cannot read") from None


def _lines(path: Path, handle: BinaryIO) -> Iterator[str]:
    """The file's lines, decoded, each with its ``\n``; a binary file splits at ``\n`` only. A
    line is read at most ``MAX_LINE_BYTES`` and its line end at a time: longer is refused."""
    number = 0
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            raise _too_long(path, number)
        try:
            yield raw.decode("utf-8-sig" if number == 1 else "utf-8")  # a leading BOM is dropped
        except UnicodeDecodeError as exc:
            raise InputError(str(path), number,
                             f"invalid UTF-8 (byte 0x{raw[exc.start]:02x})") from None


def _parse_csv(path: Path, lines: Iterable[str], kind: FileKind,
               columns: ColumnMap) -> Iterator[Record]:
    reader = csv.reader(lines, strict=True)
    header = _csv_header(path, reader, kind, columns)
    start = reader.line_num + 1
    try:
        for row in reader:
            if row:  # a truly empty line is no record
                yield _csv_record(path, header, row, start, kind)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise InputError(str(path), start, f"malformed CSV ({exc})") from None


def _csv_header(path: Path, reader: Iterator[list[str]], kind: FileKind,
                columns: ColumnMap) -> list[str]:
    try:
        header = [name.strip() for name in next(reader)]
    except (StopIteration, csv.Error):
        raise InputError(str(path), 1, "no header row") from None
    for name in header:
        _refuse_control(path, 1, name)
    duplicated = sorted({name for name in header if header.count(name) > 1})
    if duplicated:
        raise InputError(str(path), 1, f"column {duplicated[0]!r} appears twice in the header")
    header = columns.rename(str(path), 1, header)
    require_columns(path, 1, header, kind)
    return header


def _csv_record(path: Path, header: list[str], row: list[str], line: int,
                kind: FileKind) -> Record:
    if len(row) != len(header):
        raise InputError(str(path), line, f"{len(row)} fields but the header has {len(header)} "
                         "(an unquoted comma or quote?)")
    return Record(line, complete(dict(zip(header, row)), kind))


def _parse_jsonl(path: Path, lines: Iterable[str], kind: FileKind,
                 columns: ColumnMap) -> Iterator[Record]:
    checked = False  # the map is checked against the first object's keys
    for line, raw in enumerate(lines, start=1):
        if raw.strip():
            obj = _jsonl_object(path, line, raw)
            if not checked:
                columns.rename(str(path), line, list(obj))
                checked = True
            obj = columns.rename_keys(obj)
            require_columns(path, line, list(obj), kind)
            text = complete({key: as_text(value) for key, value in obj.items()}, kind)
            yield Record(line, text, obj)


def complete(fields: dict[str, str], kind: FileKind) -> dict[str, str]:
    """The record's fields with every optional column the file lacks as blank."""
    for name in kind.optional:
        fields.setdefault(name, "")
    return fields


def _jsonl_object(path: Path, line: int, raw: str) -> dict[str, Any]:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError(str(path), line, f"invalid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise InputError(str(path), line, "each line must be a JSON object")
    if _may_repeat_a_key(raw, obj):
        _refuse_duplicate_key(path, line, raw)
    return obj


def _may_repeat_a_key(raw: str, obj: dict[str, Any]) -> bool:
    """False only when no object of the line names a key twice (then orjson dropped nothing).

    A JSON text holds one colon per object member, plus the colons inside its strings. orjson's
    own text of the parsed object escapes no colon, so it holds one per member kept plus those
    in the strings kept. Unless the line spells a colon as an escape (``\\u003a``), the two
    counts are equal exactly when no member was dropped: a key given twice is the only way."""
    return raw.count(":") != orjson.dumps(obj).count(b":") or "\\u003" in raw


def _refuse_duplicate_key(path: Path, line: int, raw: str) -> None:
    """orjson keeps the last of two equal keys and says nothing (it has no hook); the standard
    library's parser hands over each object's pairs as written."""
    def pairs(members: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in members:
            if key in seen:
                raise InputError(str(path), line, f"key {key!r} appears twice in one object")
            seen.add(key)
        return dict(members)

    json.loads(raw, object_pairs_hook=pairs)


def as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode() if isinstance(value, (list, dict)) else str(value)


def require_columns(path: Path, line: int | None, names: list[str], kind: FileKind) -> None:
    missing = [name for name in kind.required if name not in names and name not in kind.optional]
    if missing:
        needed = [name for name in kind.required if name not in kind.optional]
        optional = f"; {' and '.join(kind.optional)} optional" if kind.optional else ""
        raise InputError(str(path), line, f"missing required column {missing[0]!r} "
                         f"({kind.name} need {', '.join(needed)}{optional})")


# C0 control characters other than tab, LF and CR: NUL truncates C strings and terminals act on ESC.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _refuse_control(path: Path, line: int, name: str, value: str = "") -> None:
    control = _CONTROL.search(name) or _CONTROL.search(value)
    if control:
        raise InputError(str(path), line, f"control character U+{ord(control.group()):04X} in "
                         f"{name!r} (only tab, CR and LF are allowed)")


def check_values(path: Path, kind: FileKind, record: Record) -> None:
    for name, value in record.fields.items():
        _refuse_control(path, record.line, name, value)
    for name in kind.nonempty:
        if not record.fields[name].strip():
            raise InputError(str(path), record.line, f"empty {name}")
    if kind.name == "labels" and normalise_label(record.fields["label"]) is None:
        raise InputError(str(path), record.line, f"unknown label {record.fields['label']!r} "
                         "(use Right, Partially Right or Wrong)")
