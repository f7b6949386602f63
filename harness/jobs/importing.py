"""`contam import items|answers|labels FILE`: validated files -> the append-only store.

A file is imported in one transaction: either every new row lands or none does. Importing the same
file twice adds nothing; a changed row for the same key becomes a newer row the views prefer.

Memory stays flat however long the file: records stream from
:class:`contam.harness.store.record_file.RecordFile` (CSV, JSONL or Parquet, hashed as it is read) in
chunks into a staging table inside that transaction (:mod:`contam.harness.store.staging`), and the
checks that need every row at once (duplicate keys, unknown items) and the final insert are SQL
over that table, which DuckDB may spill to disk.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from contam.harness.errors import InputError
from contam.harness.jobs.import_log import record_import
from contam.harness.store.column_map import ColumnMap
from contam.harness.store.record_file import RecordFile, parse_column_map
from contam.harness.store.records import KINDS, Record, normalise_label
from contam.harness.store import DEFAULT_STORE, Store, utc_now
from contam.harness.store.memory import within_bounds
from contam.harness.store.staging import (
    IMPORT_MEMORY, append_new_rows, first_duplicate, first_unknown_item, name_import_run, stage,
)
from contam.harness.text import normalise_answer

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
                column_map: str | Mapping[str, str] | ColumnMap | None = None) -> ImportResult:
    """``contam import KIND FILE [--map ...]``: one file into the store at ``store``, all or
    nothing. Only items start a store: answers and labels name items, which a new store cannot
    hold yet."""
    parse_column_map(column_map, KINDS[kind].required, kind)  # a bad --map opens no store
    with Store(store, create=kind == "items") as opened:
        return import_file(opened, kind, path, column_map=column_map)


def import_file(store: Store, kind: str, path: str | Path, *,
                column_map: str | Mapping[str, str] | ColumnMap | None = None) -> ImportResult:
    source = str(path)
    columns = (column_map if isinstance(column_map, ColumnMap)
               else parse_column_map(column_map, KINDS[kind].required, kind))
    RecordFile(path, KINDS[kind], columns)  # refuses an unknown file type at once
    return within_bounds(store, IMPORT_MEMORY, lambda: _import_once(store, kind, path, columns))


def _import_once(store: Store, kind: str, path: str | Path, columns: ColumnMap) -> ImportResult:
    """The file read, staged, checked and its new rows appended in one transaction (all or
    nothing: a try that ran out of memory leaves nothing, and the next reads the file again)."""
    source, records = str(path), RecordFile(path, KINDS[kind], columns)
    row_for = _ROW_BUILDERS[kind](source)
    with store.transaction():
        read = stage(store, kind, (row_for(record) for record in records))
        digest = records.sha256()  # of the very bytes parsed: the import's provenance row
        name_import_run(store, f"import:{digest[:12]}")  # imported answers: named after the file
        _refuse_duplicates(store, kind, source)
        if kind != "items":
            _refuse_unknown_items(store, source)
        added = append_new_rows(store, kind)
        record_import(store, kind, path, sha256=digest, rows=read, added=added)
    return ImportResult(kind=kind, path=source, read=read, added=added)


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


def _refuse_duplicates(store: Store, kind: str, path: str) -> None:
    """The first record whose key an earlier line of the file already had."""
    row = first_duplicate(store, KINDS[kind].key)
    if row is not None:
        raise InputError(path, int(row[0]), f"duplicate {'/'.join(KINDS[kind].key)} "
                         f"{tuple(row[2:])!r} (first on line {row[1]})")


def _refuse_unknown_items(store: Store, path: str) -> None:
    unknown = first_unknown_item(store)
    if unknown is not None:
        raise InputError(path, unknown[0], f"item_id {unknown[1]!r} is not in the store "
                         "(import the items first)")
