"""DuckDB's working memory bounded for one piece of work (an import, finding a run's pending
items, a commit of the run's writer): one thread, under a memory limit beyond which its
aggregates, sorts and temporary tables spill to disk and its buffer pool lets blocks go, so the
same work over a million rows takes about the memory it takes over a thousand. One thread because
each of DuckDB's threads wants buffers of its own: under a small limit, many threads fail where
one spills. DuckDB's limit is the whole database's: while the job's host serves a read
(:func:`serving_read`), the limit is left as it is, for a read may need more than the bound."""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

import duckdb

from contam.harness.errors import first_line
from contam.harness.store.limits import current_limit, lower_limit, put_back_limit

if TYPE_CHECKING:
    from contam.harness.store.store import Store

__all__ = ["bounded_memory", "within_bounds", "serving_read"]

T = TypeVar("T")
log = logging.getLogger(__name__)

_reads: dict[int, int] = {}  # id(store) -> reads its host serves now
_reads_lock = threading.Lock()  # the host's reader threads count them


@contextlib.contextmanager
def serving_read(store: Store) -> Iterator[None]:
    """A read the job's host serves from another thread, for its duration: meanwhile
    :func:`bounded_memory` lowers no limit (a commit's bound would be the read's too)."""
    with _reads_lock:
        _reads[id(store)] = _reads.get(id(store), 0) + 1
    try:
        yield
    finally:
        with _reads_lock:
            if _reads[id(store)] == 1:
                del _reads[id(store)]
            else:
                _reads[id(store)] -= 1


def within_bounds(store: Store, limits: Sequence[str | None], work: Callable[[], T]) -> T:
    """``work()`` under :func:`bounded_memory` of each limit in turn (None: DuckDB's own), the
    next where DuckDB runs out of memory under one: what an operator has pinned cannot spill,
    and how much that is varies from one run to the next (a first import of a million items
    failed under 32 MB in one run of two). ``work`` must leave nothing behind when it fails (a
    transaction, a spool of its own); what a failed COMMIT left open is rolled back."""
    for limit in limits[:-1]:
        try:
            with bounded_memory(store, limit):
                return work()
        except duckdb.OutOfMemoryException as exc:
            log.info("DuckDB ran out of memory under %s, tried again under the next limit: %s",
                     limit, first_line(exc))
            with contextlib.suppress(duckdb.Error):  # no transaction open: nothing to undo
                store.con.execute("ROLLBACK")
    with bounded_memory(store, limits[-1]):
        return work()


@contextlib.contextmanager
def bounded_memory(store: Store, limit: str | None) -> Iterator[None]:
    """DuckDB on one thread with its memory limit at ``limit`` (e.g. "32MB"; None: as it is) for
    the block; both put back after it. While the job's host serves a read, or where DuckDB cannot free enough to
    lower the limit now, the work goes on under the limit it has rather than fail."""
    with store.one_thread():
        previous = _lowered(store, limit)
        try:
            yield
        finally:
            if previous is not None:
                put_back_limit(store.con, previous)


def _lowered(store: Store, limit: str | None) -> str | None:
    """Set the limit; the one it replaced, or None where it was left as it is (no bound, a read
    being served, or a limit already as low: a caller's own bound is never raised)."""
    if limit is None or id(store) in _reads:
        return None
    previous = current_limit(store.con)
    if _bytes(previous) <= _bytes(limit):
        return None
    return previous if lower_limit(store.con, limit, if_possible=True) else None


_UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}


def _bytes(words: str) -> float:
    """A limit in DuckDB's words ("30.5 MiB", "32MB") in bytes; words it has no number in (no
    limit) are infinite."""
    found = re.fullmatch(r"\s*([\d.]+)\s*([KMGT]?i?B)\s*", words, re.IGNORECASE)
    return float(found[1]) * _UNITS[found[2].upper()] if found else float("inf")
