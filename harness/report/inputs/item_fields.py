"""The item columns a study names (``[study] exposure``, ``[study] released``), read from the
items' own extra columns (``items.extra``, a JSON object whose values from CSV are text) and
parsed: a number, an ISO date. An empty value is missing (the item is left out of that section
and counted); a value that does not parse is refused in one line naming the item and the file it
came from, before anything is written. See ARCHITECTURE.md, "A study's settings".
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson
import pandas as pd

from contam.harness.errors import UserError

if TYPE_CHECKING:
    from contam.harness.store.access import Reader

__all__ = ["item_fields", "numeric_column", "date_column"]

_ITEM_FIELDS_SQL = "SELECT item_id, seq AS item_seq, extra, source_file FROM latest_items ORDER BY seq"


def item_fields(store: Reader) -> pd.DataFrame:
    """One row per item: ``item_id``, ``item_seq`` (its key in the cells frame), ``fields`` (a
    dict, empty without extra columns) and ``source_file``."""
    frame = store.query_df(_ITEM_FIELDS_SQL)
    frame["fields"] = [_as_dict(v) for v in frame.pop("extra")]
    return frame


def _as_dict(value: Any) -> dict[str, Any]:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return {}
    return orjson.loads(value) if isinstance(value, str | bytes) else dict(value)


def numeric_column(items: pd.DataFrame, column: str, key: str) -> pd.Series:
    """``column`` of every item as a float (NaN where empty), indexed by item_seq; ``key`` is the
    setting that names it (``[study] exposure``), for the messages."""
    return _parsed(items, column, key, _number, "not a number")


def date_column(items: pd.DataFrame, column: str, key: str) -> pd.Series:
    """``column`` of every item as a ``datetime.date`` (None where empty), indexed by item_seq."""
    return _parsed(items, column, key, _iso_date, "not an ISO date (YYYY-MM-DD)")


def _parsed(items: pd.DataFrame, column: str, key: str, parse: Callable[[Any], Any],
            what: str) -> pd.Series:
    _require_column(items, column, key)
    values = {}
    for item_id, seq, fields, source in zip(items["item_id"], items["item_seq"], items["fields"],
                                            items["source_file"]):
        raw = fields.get(column)
        try:
            values[seq] = None if _empty(raw) else parse(raw)
        except (TypeError, ValueError):
            raise UserError(f"{source or 'items'}: item {item_id!r}: {key} column {column!r} holds "
                            f"{raw!r}, {what}") from None
    return pd.Series(values, dtype=object)


def _require_column(items: pd.DataFrame, column: str, key: str) -> None:
    present = sorted({name for fields in items["fields"] for name in fields})
    if column not in present:
        raise UserError(f"{key} = {column!r}: no item has that column (the items' extra columns: "
                        f"{', '.join(present) or 'none'})")


def _empty(raw: Any) -> bool:
    return raw is None or (isinstance(raw, str) and not raw.strip())


def _number(raw: Any) -> float:
    """A finite number; ``True``/``False`` from JSON are not numbers."""
    if isinstance(raw, bool):
        raise ValueError(raw)
    value = float(raw.strip() if isinstance(raw, str) else raw)
    if not math.isfinite(value):
        raise ValueError(raw)
    return value


def _iso_date(raw: Any) -> datetime.date:
    if not isinstance(raw, str):
        raise ValueError(raw)
    return datetime.date.fromisoformat(raw.strip())
