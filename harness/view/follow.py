"""Following a table of the append-only store: each call returns only the rows added since the
last one, so that the app's in-memory indexes cost what changed, not what is there.

Rows come in ``seq`` order after the last ``seq`` seen (``seq`` grows with every insert, so the
table's zone maps skip everything older). The whole table's row count says whether anything is
new at all, and whether the new rows add up: two writers' transactions can commit in the other
order than their sequence numbers, leaving a row below a ``seq`` already seen, and then the
counts do not add up and the follower starts over from nothing.

The same counts version what is built from whole tables (the report, the filters' values, the
agreement page): :func:`store_version`, and :class:`Rebuilt` for what is built from the store alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from contam.harness.store.schema import TABLE_COLUMNS

__all__ = ["Follower", "Delta", "store_version", "Rebuilt"]


def store_version(store: Any, tables: Iterable[str] = TABLE_COLUMNS) -> tuple[int, ...]:
    """The row counts of ``tables`` (every table of the store by default): append-only tables,
    so the same counts mean the same rows and what was built from them still stands."""
    counts = ", ".join(f"(SELECT count(*) FROM {table})" for table in tables)
    return tuple(store.query(f"SELECT {counts}")[0])


class Rebuilt:
    """What ``build(store)`` returns, built again only once ``tables`` have grown."""

    def __init__(self, build: Callable[[Any], Any], tables: Iterable[str]) -> None:
        self.build, self.tables = build, tuple(tables)
        self._lock = threading.Lock()
        self._built: tuple[tuple[int, ...], Any] | None = None

    def get(self, store: Any) -> Any:
        version = store_version(store, self.tables)
        with self._lock:
            if self._built is None or self._built[0] != version:
                self._built = (version, self.build(store))
            return self._built[1]


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
    count: int = -1  # rows of the whole table seen; -1 before the first call
    last_seq: int = -1

    def fetch(self, store: Any) -> Delta:
        """What was appended since the last call (a reset Delta on the first call)."""
        (count, last), = store.query(f"SELECT count(*), max(seq) FROM {self.table}")
        if count == self.count:  # append-only: the same count means nothing new
            return Delta([])
        reset = self.count < 0 or self.count + self._newer(store) != count
        rows = self._rows(store, -1 if reset else self.last_seq, last)
        self.count, self.last_seq = count, last if last is not None else -1
        return Delta(rows, reset)

    def _newer(self, store: Any) -> int:
        return store.query(f"SELECT count(*) FROM {self.table} WHERE seq > $after",
                           {"after": self.last_seq})[0][0]

    def _rows(self, store: Any, after: int, upto: int | None) -> list[tuple]:
        bounds = {"after_seq": after, "upto_seq": upto if upto is not None else -1}
        return store.query(f"SELECT seq, {self.columns} FROM {self.table} WHERE ({self.where}) "
                           "AND seq > $after_seq AND seq <= $upto_seq ORDER BY seq",
                           {**self.params, **bounds})
