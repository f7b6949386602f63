"""`contam import items|answers|labels FILE`: validated files -> the append-only store.

A file is imported in one transaction: either every new row lands or none does. Importing the same
file twice adds nothing; a changed row for the same key becomes a newer row the views prefer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import orjson
import pandas as pd

from harness.errors import InputError
from harness.jobs.records import KINDS, Record, normalise_label, read_records
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


def import_path(kind: str, path: str | Path, *, store: str | Path = DEFAULT_STORE) -> ImportResult:
    """``contam import KIND FILE``: one file into the store at ``store``, all or nothing."""
    with Store(store) as opened:
        return import_file(opened, kind, path)


def import_file(store: Store, kind: str, path: str | Path) -> ImportResult:
    records = read_records(path, KINDS[kind])
    frame = _FRAME_BUILDERS[kind](records, str(path))
    with store.transaction():
        if kind != "items":
            _refuse_unknown_items(store, frame, str(path))
        added = store.append_query(kind, _NEW_ROWS_SQL[kind], staged=frame)
    return ImportResult(kind=kind, path=str(path), read=len(records), added=added)


# -- DataFrames shaped like the tables, plus the source line for error messages ---------------

def _items_frame(records: list[Record], source: str) -> pd.DataFrame:
    required = KINDS["items"].required
    now = utc_now()
    rows = [{**{name: r.fields[name].strip() for name in required},
             "reference": r.fields["reference"].strip(),
             "extra": _extra_json(r.fields, required), "source_file": source,
             "added_at": now, "_line": r.line} for r in records]
    return _frame(rows, [*required, "extra", "source_file", "added_at", "_line"])


def _answers_frame(records: list[Record], source: str) -> pd.DataFrame:
    run_id = f"import:{_file_digest(source)}"
    now = utc_now()
    rows = [{"run_id": run_id, "item_id": r.fields["item_id"].strip(),
             "model": r.fields["model"].strip(), "provider": "import",
             "answer_raw": r.fields["answer"], "answer": normalise_answer(r.fields["answer"]),
             "created_at": now, "_line": r.line} for r in records]
    return _frame(rows, ["run_id", "item_id", "model", "provider", "answer_raw", "answer",
                         "created_at", "_line"])


def _labels_frame(records: list[Record], source: str) -> pd.DataFrame:
    now = utc_now()
    rows = [{"item_id": r.fields["item_id"].strip(), "model": r.fields["model"].strip(),
             "rater": r.fields["rater"].strip(), "label": normalise_label(r.fields["label"]),
             "rubric_sha256": r.fields.get("rubric_sha256") or None, "source_file": source,
             "created_at": now, "_line": r.line} for r in records]
    return _frame(rows, ["item_id", "model", "rater", "label", "rubric_sha256", "source_file",
                         "created_at", "_line"])


def _frame(rows: list[dict], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns).astype({"_line": "int64"})


def _extra_json(fields: dict[str, str], required: tuple[str, ...]) -> str | None:
    """Extra columns (e.g. `source`) are kept by name, never shifted into another column."""
    extra = {k: v for k, v in fields.items() if k not in required}
    return orjson.dumps(extra).decode() if extra else None


def _file_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


_FRAME_BUILDERS = {"items": _items_frame, "answers": _answers_frame, "labels": _labels_frame}

# Only rows that differ from the latest row for the same key are appended.
_NEW_ROWS_SQL = {
    "items": """SELECT * EXCLUDE (_line) FROM staged s WHERE NOT EXISTS (
        SELECT 1 FROM latest_items l WHERE l.item_id = s.item_id AND l.title = s.title
          AND l.subset = s.subset AND l.question = s.question AND l.reference = s.reference
          AND l.extra IS NOT DISTINCT FROM s.extra::JSON) ORDER BY _line""",
    "answers": """SELECT * EXCLUDE (_line) FROM staged s WHERE NOT EXISTS (
        SELECT 1 FROM latest_answers l WHERE l.item_id = s.item_id AND l.model = s.model
          AND l.answer_raw IS NOT DISTINCT FROM s.answer_raw) ORDER BY _line""",
    "labels": """SELECT * EXCLUDE (_line) FROM staged s WHERE NOT EXISTS (
        SELECT 1 FROM latest_labels l WHERE l.item_id = s.item_id AND l.model = s.model
          AND l.rater = s.rater AND l.label = s.label) ORDER BY _line""",
}


def _refuse_unknown_items(store: Store, frame: pd.DataFrame, path: str) -> None:
    store.con.register("staged_ids", frame[["item_id", "_line"]])
    try:
        row = store.con.execute(
            "SELECT min(_line), arg_min(item_id, _line) FROM staged_ids "
            "WHERE item_id NOT IN (SELECT item_id FROM items)").fetchall()[0]
    finally:
        store.con.unregister("staged_ids")
    if row[0] is not None:
        raise InputError(path, int(row[0]), f"item_id {row[1]!r} is not in the store "
                         "(import the items first)")
