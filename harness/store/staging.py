"""The staging table an import goes through (ARCHITECTURE.md, The store): a file's records are
inserted in chunks into a temporary ``staged`` table (the connection's own, never in the store
file; dropped once the rows are appended), checked there in SQL, and only the rows that differ from
the latest row of their key are appended. DuckDB may spill the table to disk: its memory limit is
lowered while importing. ``contam import`` (harness/jobs/importing.py) drives it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from contam.harness.store.records import KINDS

if TYPE_CHECKING:
    from contam.harness.store.store import Store

__all__ = ["STAGED_COLUMNS", "IMPORT_MEMORY", "stage", "name_import_run", "first_duplicate",
           "first_unknown_item", "append_new_rows"]

# Rows per INSERT into the staging table: large enough that the per-statement cost vanishes,
# small enough that a chunk's Python objects stay a few MB (20,000 rows weighed ~40 MB more).
_CHUNK_ROWS = 5_000
# DuckDB's memory while importing: it spills the staging table, the duplicate check's window and
# the comparison with the latest items to disk beyond the first, so a re-import of a million
# items (each `contam run` re-imports its config's file) stays near a small file's peak (under
# 32 MB it ran out of memory in most tries); the import is made again under the next where
# DuckDB runs out under one (None: its own).
IMPORT_MEMORY = ("64MB", "256MB", None)
# ... and while the new rows are appended (a first import of 250,000 items failed under 32 MB).
_APPEND_MEMORY_LIMIT = "256MB"

# The staged columns of each kind: its table's, as the import fills them, and the source line.
STAGED_COLUMNS = {
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


def stage(store: Store, kind: str, rows: Iterable[dict[str, Any]]) -> int:
    """Every row (a dict of ``STAGED_COLUMNS[kind]``) into a fresh ``staged`` table shaped like
    ``kind`` plus ``_line``; returns how many."""
    store.con.execute(f"CREATE OR REPLACE TEMP TABLE staged AS "
                      f"SELECT * EXCLUDE (seq), 0::BIGINT AS _line FROM {kind} WHERE false")
    columns = STAGED_COLUMNS[kind]
    select = ", ".join(f"unnest(${n}) AS {c}" for n, c in enumerate(columns, start=1))
    read = 0
    for chunk in _chunks(rows, _CHUNK_ROWS):
        store.con.execute(f"INSERT INTO staged BY NAME SELECT {select}",
                          [[row[c] for row in chunk] for c in columns])
        read += len(chunk)
    return read


def name_import_run(store: Store, run_id: str) -> None:
    """The ``run_id`` imported answers are stored under (:func:`append_new_rows` reads it)."""
    store.con.execute("SET VARIABLE import_run_id = $1", [run_id])


def first_duplicate(store: Store, key: tuple[str, ...]) -> tuple | None:
    """(line, first line, *key values) of the first staged row whose ``key`` an earlier line
    already had; None when every key is new."""
    columns = ", ".join(key)
    rows = store.query(
        f"SELECT _line, first_line, {columns} FROM (SELECT *, min(_line) OVER (PARTITION BY "
        f"{columns}) AS first_line FROM staged) WHERE _line > first_line ORDER BY _line LIMIT 1")
    return rows[0] if rows else None


def first_unknown_item(store: Store) -> tuple[int, str] | None:
    """(line, item_id) of the first staged row naming an item the store does not hold."""
    line, item_id = store.query("SELECT min(_line), arg_min(item_id, _line) FROM staged "
                                "WHERE item_id NOT IN (SELECT item_id FROM items)")[0]
    return None if line is None else (int(line), item_id)


def append_new_rows(store: Store, kind: str) -> int:
    """Append the staged rows that differ from the latest row of their key; how many. They are
    found first, under the import's bound, into a temporary table that spills; only appending
    them to the store's table, which DuckDB holds in memory until the import commits, raises the
    limit to ``_APPEND_MEMORY_LIMIT`` (a re-import of the same file appends nothing). The staged
    table is dropped then: kept, it weighed on the rest of the command (`contam run` imports its
    config's items first; a million of them stayed in DuckDB's memory all the run)."""
    store.con.execute(f"CREATE OR REPLACE TEMP TABLE fresh AS {_NEW_ROWS_SQL[kind]}")
    store.con.execute("DROP TABLE temp.staged")
    try:
        if not store.count("fresh"):
            return 0
        with store.memory_limit(_APPEND_MEMORY_LIMIT):
            return store.append_query(kind, "SELECT * FROM fresh")
    finally:
        store.con.execute("DROP TABLE temp.fresh")


def _chunks(rows: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    iterator = iter(rows)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk
