"""DuckDB's working memory bounded for one piece of work (an import, finding a run's pending
items, a commit of the run's writer): one thread, under a memory limit beyond which its
aggregates, sorts and temporary tables spill to disk and its buffer pool lets blocks go, so the
same work over a million rows takes about the memory it takes over a thousand. One thread because
each of DuckDB's threads wants buffers of its own: under a small limit, many threads fail where
one spills."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import duckdb

if TYPE_CHECKING:
    from contam.harness.store.store import Store

__all__ = ["bounded_memory"]


@contextlib.contextmanager
def bounded_memory(store: Store, limit: str) -> Iterator[None]:
    """DuckDB on one thread with its memory limit at ``limit`` (e.g. "32MB") for the block; both
    put back after it. Where DuckDB cannot free enough to lower the limit now (blocks a read the
    job's host serves holds), the work goes on under the limit it has rather than fail."""
    store.single_threaded(True)
    try:
        with contextlib.ExitStack() as lowered:
            with contextlib.suppress(duckdb.OutOfMemoryException):  # DuckDB keeps its limit
                lowered.enter_context(store.memory_limit(limit))
            yield
    finally:
        store.single_threaded(False)
