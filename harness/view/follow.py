"""Following a table of the append-only store: each call returns only the rows added since the
last one, so that the app's in-memory indexes cost what changed, not what is there.

Rows come in ``seq`` order after the last ``seq`` seen. Two writers' transactions can commit in
the other order than their sequence numbers, so a row can appear below a ``seq`` already seen:
the row count says so (it no longer adds up), and then the follower starts over from nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Follower", "Delta"]


@dataclass(frozen=True)
class Delta:
    """``reset``: the rows are the whole table again (drop what was built from earlier ones)."""

    rows: list[tuple]
    reset: bool = False


@dataclass
class Follower:
    """``SELECT seq, <columns> FROM <table> WHERE <where>``, fetched a delta at a time."""

    table: str
    columns: str
    where: str = "true"
    params: Mapping[str, Any] = field(default_factory=dict)
    count: int = -1  # rows seen; -1 before the first call
    last_seq: int = -1

    def fetch(self, store: Any) -> Delta:
        """What was appended since the last call (a reset Delta on the first call)."""
        (count,), = store.query(f"SELECT count(*) FROM {self.table} WHERE {self.where}", self.params)
        if count == self.count:  # append-only: the same count means nothing new
            return Delta([])
        rows = self._rows(store, self.last_seq) if self.count >= 0 else None
        reset = rows is None or self.count + len(rows) != count
        if reset:
            rows = self._rows(store, -1)
        self.count = len(rows) if reset else self.count + len(rows)
        self.last_seq = rows[-1][0] if rows else (-1 if reset else self.last_seq)
        return Delta(rows, reset)

    def _rows(self, store: Any, after: int) -> list[tuple]:
        return store.query(f"SELECT seq, {self.columns} FROM {self.table} WHERE ({self.where}) "
                           "AND seq > $after_seq ORDER BY seq", {**self.params, "after_seq": after})
