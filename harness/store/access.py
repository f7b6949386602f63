"""Reaching a store from a process that does not hold it: read it, append labels to it, and see
the progress of the job that holds it.

Each call finds out who has the store. When nobody does, it opens the file itself (read-only to
read) for the length of the call (of the ``with``, for :func:`reading`) and no longer, so that
nothing here keeps a job from taking the store. When a
contam job holds it, the call goes through that job's store host (:mod:`contam.harness.store.host`,
found by the discovery file beside the store). When another process holds it and serves no
reads, the call waits a moment (it may be a reader that is about to let go: a `contam sql`, a
view's request, a job starting its host) and then says who holds it, in one line.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from contam.harness.errors import UserError
from contam.harness.store import store as store_module
from contam.harness.store.discovery import Holder, HostGone, find_holder
from contam.harness.store.labels import append_label_rows
from contam.harness.store.store import Store, StoreInUse
from contam.harness.store.wanted import ask_for, withdraw_ask

if TYPE_CHECKING:
    import pandas as pd

    from contam.harness.store.client import HostReader  # httpx: imported only when a job holds the store

__all__ = ["Reader", "reading", "append_labels", "prepare", "live_progress"]

_RETRY_S = 0.1


class Reader(Protocol):
    """What a reader of the store may call, on the file itself or through its holder's host."""

    path: Path

    def query(self, sql: str, params: Iterable[Any] | None = None) -> list[tuple]: ...

    def query_dicts(self, sql: str, params: Iterable[Any] | None = None) -> list[dict[str, Any]]: ...

    def query_df(self, sql: str, params: Iterable[Any] | None = None,
                 categories: Sequence[str] = ()) -> "pd.DataFrame": ...

    def count(self, table: str) -> int: ...

    def checked_query(self, query: str) -> tuple[list[str], list[tuple]]: ...

    def checked_chunks(self, query: str) -> tuple[list[str], Iterator[list[tuple]]]: ...

    def interrupt(self) -> None: ...


@contextmanager
def reading(path: str | Path, *, lean: bool = False) -> Iterator[Reader]:
    """A reader of the store for the length of the ``with``: ``query``, ``query_dicts``,
    ``query_df``, ``count`` and `contam sql`'s ``checked_query``. When the job it reads through
    finishes meanwhile, the next call opens the store itself. ``lean``: a store opened here reads
    under DuckDB's lowered memory limits (:meth:`Store.lean`; a job's host keeps its own)."""
    reader = _Following(path, lean)
    try:
        yield reader
    finally:
        reader.close()


def append_labels(path: str | Path, rows: Sequence[Mapping[str, Any]],
                  table: str = "labels") -> int:
    """Append ``labels`` rows (or ``label_sessions`` rows: a `contam view` rater's shuffle seed)
    in one transaction, committed when this returns (``created_at`` is now where a row has none)."""
    try:
        return _append_once(path, rows, table)
    except HostGone:  # its job finished meanwhile: the store is free now, or another job's
        return _append_once(path, rows, table)


def _append_once(path: str | Path, rows: Sequence[Mapping[str, Any]], table: str) -> int:
    with _reach(path, read_only=False) as reached:
        if isinstance(reached, Store):
            return append_label_rows(reached.con, rows, table)
        return reached.append_labels(rows, table)


def prepare(path: str | Path) -> None:
    """Reach the store once as a writer: opened here, that applies every migration (a job that
    holds it applied them when it opened it), so that a long-lived reader (`contam view`)
    finds the tables and views it reads."""
    with _reach(path, read_only=False):
        pass


def live_progress(path: str | Path) -> list[dict[str, Any]] | None:
    """The per-model counters of the job holding the store (keys: model, done, total, failed,
    retries, rate_limited, in_flight, concurrency, rate_per_s, cooling_down_s, stopped); None
    when no job holding it serves them."""
    holder = find_holder(path)
    if holder is None:
        return None
    from contam.harness.store.client import HostReader

    with HostReader(path, holder) as reader:  # one request a poll: no /health before it
        try:
            return reader.progress()
        except UserError:  # HostGone, or nothing of this holder's answers there
            return None


class _Following:
    """A :class:`Reader` on the store itself or through its holder's host, which moves to the
    store itself (or to the next holder) when the host goes away between two calls."""

    def __init__(self, path: str | Path, lean: bool = False) -> None:
        self.path, self.lean = Path(path), lean
        self._reader = self._reached()

    @property
    def through_host(self) -> bool:
        return not isinstance(self._reader, Store)

    def query(self, sql: str, params: Iterable[Any] | None = None) -> list[tuple]:
        return self._call("query", sql, params)

    def query_dicts(self, sql: str, params: Iterable[Any] | None = None) -> list[dict[str, Any]]:
        return self._call("query_dicts", sql, params)

    def query_df(self, sql: str, params: Iterable[Any] | None = None,
                 categories: Sequence[str] = ()) -> "pd.DataFrame":
        return self._call("query_df", sql, params, categories)

    def count(self, table: str) -> int:
        return self._call("count", table)

    def checked_query(self, query: str) -> tuple[list[str], list[tuple]]:
        return self._call("checked_query", query)

    def checked_chunks(self, query: str) -> tuple[list[str], Iterator[list[tuple]]]:
        return self._call("checked_chunks", query)

    def interrupt(self) -> None:
        self._reader.interrupt()

    def close(self) -> None:
        self._reader.close()

    def _call(self, name: str, *args: Any) -> Any:
        try:
            return getattr(self._reader, name)(*args)
        except HostGone:
            self._reader.close()
            self._reader = self._reached()
            return getattr(self._reader, name)(*args)

    def _reached(self) -> "Store | HostReader":
        reader = _reach(self.path, read_only=True)
        if self.lean and isinstance(reader, Store):
            reader.lean()
        return reader


def _reach(path: str | Path, *, read_only: bool) -> "Store | HostReader":
    """The store opened here, or its holder's host; waits up to LOCK_WAIT_S for either."""
    deadline = time.monotonic() + store_module.LOCK_WAIT_S
    asked = False
    while True:
        try:
            opened = Store(path, read_only=read_only, lock_wait_s=0)
        except StoreInUse as in_use:
            reader = _host(path, in_use.found)
            if reader is not None:
                return reader
            if time.monotonic() >= deadline:
                raise StoreInUse(in_use.path, in_use.pid, f"{in_use.holder}, which serves no "
                                 "reads") from None
            if not asked:  # a `contam view` keeping the store open lets go (store/wanted.py)
                asked = True
                ask_for(path)
            time.sleep(_RETRY_S)
            continue
        if asked:
            withdraw_ask(path)
        return opened


def _host(path: str | Path, holder: Holder | None) -> "HostReader | None":
    if holder is None:
        return None
    from contam.harness.store.client import connect

    return connect(path, holder)
