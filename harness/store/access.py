"""Reaching a store from a process that does not hold it: read it, append labels to it, and see
the progress of the process that does. Today each call opens the file itself and closes it at
once, so that nothing here keeps another command from taking the store."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.store.store import Store

__all__ = ["reading", "append_labels", "append_label_sessions", "prepare", "live_progress"]


@contextmanager
def reading(path: str | Path) -> Iterator[Store]:
    """A read-only store for the length of the ``with``: ``query``, ``query_dicts``, ``count``."""
    with Store(path, read_only=True) as store:
        yield store


def append_labels(path: str | Path, rows: Sequence[Mapping[str, Any]]) -> int:
    """Append ``labels`` rows in one transaction, committed when this returns."""
    with Store(path) as store, store.transaction():
        return store.append("labels", rows)


def append_label_sessions(path: str | Path, rows: Sequence[Mapping[str, Any]]) -> int:
    """Append ``label_sessions`` rows (a rater's shuffle seed) in one transaction."""
    with Store(path) as store, store.transaction():
        return store.append("label_sessions", rows)


def prepare(path: str | Path) -> None:
    """Open the store for writing once and close it: that applies every migration, so that a
    long-lived reader (``contam view``) finds the tables and views it reads."""
    Store(path).close()


def live_progress(path: str | Path) -> list[dict[str, Any]] | None:
    """The lane counters of the process writing the store; None when none is."""
    return None
