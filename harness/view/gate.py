"""The app's one way to the store: every read and write goes through :mod:`harness.store.access`,
one at a time, and nothing stays open between them, so another command can take the store
whenever no request is being answered.

One at a time because DuckDB refuses, within one process, a read-only and a read-write
connection to the same file at once; requests are short, so waiting is cheap.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.store import access

__all__ = ["StoreGate"]


class StoreGate:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.lock = threading.RLock()  # held by a caller across a write and the read after it

    @contextmanager
    def reading(self) -> Iterator[Any]:
        with self.lock, access.reading(self.path) as store:
            yield store

    def append_labels(self, rows: Sequence[Mapping[str, Any]]) -> int:
        """Committed when this returns: only then may a page say the label is saved."""
        with self.lock:
            return access.append_labels(self.path, rows)

    def append_label_sessions(self, rows: Sequence[Mapping[str, Any]]) -> int:
        with self.lock:
            return access.append_labels(self.path, rows, "label_sessions")

    def live_progress(self) -> list[dict[str, Any]] | None:
        """Asked of the holding job's host, never of DuckDB: no need to wait for the lock."""
        return access.live_progress(self.path)
