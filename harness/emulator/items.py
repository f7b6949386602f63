"""The items an emulated model knows, read from an items file as ``contam import items`` reads it
(CSV or JSONL; extra columns allowed), with an optional numeric exposure column per item.

A missing exposure column, or a value in it that is blank, not a number or not finite, is an
:class:`~contam.harness.errors.InputError` naming the file (and the line), before the emulator starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from contam.harness.errors import InputError
from contam.harness.store.record_file import KINDS, read_records
from contam.harness.store.records import Record

__all__ = ["KnownItem", "read_known_items"]

_COLUMNS = ("item_id", "title", "subset", "question", "reference")


@dataclass(frozen=True)
class KnownItem:
    item_id: str
    title: str
    subset: str
    question: str
    reference: str
    exposure: float | None = None  # the item's value in the --exposure column, if one is named


def read_known_items(path: str | Path, exposure: str | None = None) -> list[KnownItem]:
    """Every item of the file; with ``exposure``, each one's value in that column as a number."""
    records = list(read_records(path, KINDS["items"]))
    if exposure is not None and records and exposure not in records[0].fields:
        columns = ", ".join(records[0].fields)
        raise InputError(str(path), None, f"no column {exposure!r} for --exposure "
                                          f"(the file has {columns})")
    return [_known_item(path, record, exposure) for record in records]


def _known_item(path: str | Path, record: Record, exposure: str | None) -> KnownItem:
    values = (record.fields.get(name, "").strip() for name in _COLUMNS)
    number = None if exposure is None else _number(path, record, exposure)
    return KnownItem(*values, exposure=number)


def _number(path: str | Path, record: Record, column: str) -> float:
    """The record's value in ``column``, a finite number (JSONL lines may lack the key)."""
    raw = record.fields.get(column, "").strip()
    try:
        number = float(raw)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        shown = repr(raw) if raw else "an empty value"
        raise InputError(str(path), record.line, f"exposure column {column!r} holds {shown}, "
                                                 "not a number")
    return number
