"""`contam import items|answers|labels FILE`: validated files -> the append-only store.

A file is imported in one transaction: either every new row lands or none does. Importing the same
file twice adds nothing; a changed row for the same key becomes a newer row the views prefer.

Memory stays flat however long the file: records stream from
:class:`harness.store.record_file.RecordFile` (CSV, JSONL or Parquet, hashed as it is read) in
chunks into a staging table inside that transaction,
and the checks that need every row at once (duplicate keys, unknown items) and the final insert
are SQL over the staging table, which DuckDB may spill to disk (its ``memory_limit`` is lowered
while importing).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from harness.errors import InputError
from harness.jobs.import_log import record_import
from harness.store.record_file import RecordFile, parse_column_map
from harness.store.records import KINDS, Record, normalise_label
from harness.store import DEFAULT_STORE, Store, utc_now
from harness.text import normalise_answer

__all__ = ["ImportResult", "import_file", "import_path"]


@dataclass(frozen=True)
class ImportResult:
    kind: str
    path: str
    read: int
    added: int

    @property
    def unchanged(self) -> int:
        return self.read - self.added

    def summary(self) -> str:
        return (f"{self.path}: {self.read} {self.kind} read, {self.added} added, "
                f"{self.unchanged} already in the store")


def import_path(kind: str, path: str | Path, *, store: str | Path = DEFAULT_STORE,
                column_map: str | None = None) -> ImportResult:
    """``contam import KIND FILE [--map ...]``: one file into the store at ``store``, all or
    nothing. Only items start a store: answers and labels name items, which a new store cannot
    hold yet."""
    parse_column_map(column_map, KINDS[kind].required, kind)  # a bad --map opens no store
    with Store(store, create=kind == "items") as opened:
        return import_file(opened, kind, path, column_map=column_map)


# Rows per INSERT into the staging table: large enough that the per-statement cost vanishes,
# small enough that a chunk's Python objects stay a few MB.
_CHUNK_ROWS = 20_000
# DuckDB's memory while importing (it spills the staging table to disk beyond this).
_IMPORT_MEMORY_LIMIT = "256MB"


def import_file(store: Store, kind: str, path: str | Path, *,
                column_map: str | None = None) -> ImportResult:
    source = str(path)
    columns = parse_column_map(column_map, KINDS[kind].required, kind)
    records = RecordFile(path, KINDS[kind], columns)  # refuses an unknown file type at once
    row_for = _ROW_BUILDERS[kind](source)
    with _import_memory_limit(store), store.transaction():
        read = _stage(store, kind, (row_for(record) for record in records))
        digest = records.sha256()  # of the very bytes parsed: the import's provenance row
        # imported answers are named after their file (the insert below reads the variable)
        store.con.execute("SET VARIABLE import_run_id = $1", [f"import:{digest[:12]}"])
        _refuse_duplicates(store, kind, source)
        if kind != "items":
            _refuse_unknown_items(store, source)
        added = store.append_query(kind, _NEW_ROWS_SQL[kind])
        record_import(store, kind, path, sha256=digest, rows=read, added=added)
    return ImportResult(kind=kind, path=source, read=read, added=added)


@contextlib.contextmanager
def _import_memory_limit(store: Store) -> Iterator[None]:
    """Lower DuckDB's memory limit for one import, and put it back."""
    previous = store.con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    store.con.execute(f"SET memory_limit = '{_IMPORT_MEMORY_LIMIT}'")
    try:
        yield
    finally:
        store.con.execute(f"SET memory_limit = '{previous}'")


def _stage(store: Store, kind: str, rows: Iterator[dict[str, Any]]) -> int:
    """Every row into a temporary ``staged`` table shaped like ``kind`` plus ``_line`` (the
    connection's own, never in the store file; the next import replaces it)."""
    store.con.execute(f"CREATE OR REPLACE TEMP TABLE staged AS "
                      f"SELECT * EXCLUDE (seq), 0::BIGINT AS _line FROM {kind} WHERE false")
    columns = _STAGED_COLUMNS[kind]
    select = ", ".join(f"unnest(${n}) AS {c}" for n, c in enumerate(columns, start=1))
    read = 0
    for chunk in _chunks(rows, _CHUNK_ROWS):
        store.con.execute(f"INSERT INTO staged BY NAME SELECT {select}",
                          [[row[c] for row in chunk] for c in columns])
        read += len(chunk)
    return read


def _chunks(rows: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    iterator = iter(rows)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


# -- one table row per record, plus the source line for error messages ------------------------

def _items_row(source: str) -> Callable[[Record], dict[str, Any]]:
    kind, now = KINDS["items"], utc_now()

    def row(r: Record) -> dict[str, Any]:
        values = {name: r.fields[name].strip() for name in kind.required}
        for name in kind.optional:  # a blank or absent title or subset is NULL
            values[name] = values[name] or None
        return {**values, "extra": _extra_json(r.typed, kind.required), "source_file": source,
                "added_at": now, "_line": r.line}

    return row


def _answers_row(source: str) -> Callable[[Record], dict[str, Any]]:
    now = utc_now()  # run_id is set once the file's digest is known (import_file)
    return lambda r: {"run_id": None, "item_id": r.fields["item_id"].strip(),
                      "model": r.fields["model"].strip(), "provider": "import",
                      "answer_raw": r.fields["answer"],
                      "answer": normalise_answer(r.fields["answer"]), "created_at": now,
                      "_line": r.line}


def _labels_row(source: str) -> Callable[[Record], dict[str, Any]]:
    now = utc_now()
    return lambda r: {"item_id": r.fields["item_id"].strip(), "model": r.fields["model"].strip(),
                      "rater": r.fields["rater"].strip(),
                      "label": normalise_label(r.fields["label"]),
                      "rubric_sha256": r.fields.get("rubric_sha256") or None,
                      "source_file": source, "created_at": now, "_line": r.line}


def _extra_json(values: dict[str, Any], required: tuple[str, ...]) -> str | None:
    """Extra columns (e.g. `source`) are kept by name, never shifted into another column; a JSONL
    or Parquet value keeps its JSON type (a number stays a number)."""
    extra = {k: v for k, v in values.items() if k not in required}
    return orjson.dumps(extra, default=str).decode() if extra else None


_ROW_BUILDERS = {"items": _items_row, "answers": _answers_row, "labels": _labels_row}
_STAGED_COLUMNS = {
    "items": (*KINDS["items"].required, "extra", "source_file", "added_at", "_line"),
    "answers": ("run_id", "item_id", "model", "provider", "answer_raw", "answer", "created_at",
                "_line"),
    "labels": ("item_id", "model", "rater", "label", "rubric_sha256", "source_file", "created_at",
               "_line"),
}

# Only rows that differ from the latest row for the same key are appended.
_NEW_ROWS_SQL = {
    "items": """SELECT * EXCLUDE (_line) FROM staged s WHERE NOT EXISTS (
        SELECT 1 FROM latest_items l WHERE l.item_id = s.item_id
          AND l.title IS NOT DISTINCT FROM s.title AND l.subset IS NOT DISTINCT FROM s.subset
          AND l.question = s.question AND l.reference = s.reference
          AND l.extra IS NOT DISTINCT FROM s.extra::JSON) ORDER BY _line""",
    "answers": """SELECT * EXCLUDE (_line) REPLACE (getvariable('import_run_id') AS run_id)
        FROM staged s WHERE NOT EXISTS (
        SELECT 1 FROM latest_answers l WHERE l.item_id = s.item_id AND l.model = s.model
          AND l.answer_raw IS NOT DISTINCT FROM s.answer_raw) ORDER BY _line""",
    "labels": """SELECT * EXCLUDE (_line) FROM staged s WHERE NOT EXISTS (
        SELECT 1 FROM latest_labels l WHERE l.item_id = s.item_id AND l.model = s.model
          AND l.rater = s.rater AND l.label = s.label) ORDER BY _line""",
}


def _refuse_duplicates(store: Store, kind: str, path: str) -> None:
    """The first record whose key an earlier line of the file already had."""
    key = ", ".join(KINDS[kind].key)
    row = store.con.execute(
        f"SELECT _line, first_line, {key} FROM (SELECT *, min(_line) OVER (PARTITION BY {key}) "
        f"AS first_line FROM staged) WHERE _line > first_line ORDER BY _line LIMIT 1").fetchone()
    if row is not None:
        raise InputError(path, int(row[0]), f"duplicate {'/'.join(KINDS[kind].key)} "
                         f"{tuple(row[2:])!r} (first on line {row[1]})")


def _refuse_unknown_items(store: Store, path: str) -> None:
    row = store.con.execute(
        "SELECT min(_line), arg_min(item_id, _line) FROM staged "
        "WHERE item_id NOT IN (SELECT item_id FROM items)").fetchall()[0]
    if row[0] is not None:
        raise InputError(path, int(row[0]), f"item_id {row[1]!r} is not in the store "
                         "(import the items first)")
