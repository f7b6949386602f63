"""`contam sql`: one read-only query on the store, as a table, CSV or JSON.

Read-only in every sense, not only for the store file: the query must parse as exactly one
read-only statement, and it can read or write no other file (``COPY``, ``EXPORT``, ``ATTACH``,
``read_csv``, ``glob``) and reach no network (``INSTALL``). That holds whether the store is
opened here or read through the job that holds it; :mod:`contam.harness.store.readonly` says how.
How the rows are written (streamed, the table capped): :mod:`contam.harness.jobs.sql_output`.

The command's query runs on a worker thread while the command's own thread only waits: Python
delivers Ctrl-C to that waiting thread at once, wherever the worker is (opening the store,
handing the query to DuckDB, fetching), and the waiting thread interrupts DuckDB
(``interrupt()``) until the worker has stopped.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import duckdb

from contam.harness.declare import options_from
from contam.harness.errors import LinedError
from contam.harness.jobs.options.store_tools import SqlOptions
from contam.harness.jobs.sql_output import TABLE_ROWS, Printed, visible, write_rows
from contam.harness.store import DEFAULT_STORE
from contam.harness.store.access import Reader, reading

__all__ = ["sql", "print_sql", "run_query", "visible", "QueryResult", "Printed", "TABLE_ROWS"]

_POLL_S = 0.05  # how often the waiting thread looks up (it wakes at once for Ctrl-C)
_STOP_WAIT_S = 5.0  # how long an interrupted worker is given to let go of the store


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple]

    def text(self, fmt: str = "table", width: int | None = None) -> str:
        """Every row as a rich table (fitted to a terminal ``width``; without one, at its
        natural width, so that no value is ever cut), CSV or JSON."""
        text = io.StringIO()
        write_rows(fmt, self.columns, iter([self.rows]), text, width=width)
        return text.getvalue()


def sql(query: str, *, store: str | Path = DEFAULT_STORE) -> QueryResult:
    """``contam sql``: ``query`` on the store, read-only (through the job holding it, if one does)."""
    with reading(store) as opened:
        columns, chunks = run_query(opened, query)
        return QueryResult(columns, [row for chunk in chunks for row in chunk])


def print_sql(query: str, out: TextIO, *, store: str | Path = DEFAULT_STORE,
              options: SqlOptions | None = None, width: int | None = None,
              **keywords: Any) -> Printed:
    """``query``'s result written to ``out`` while it is fetched, as a table (its first
    ``max_rows`` rows; 0: all), CSV or JSON; Ctrl-C stops it at any moment (KeyboardInterrupt).
    ``options`` (or its fields as keywords: ``format=``, ``max_rows=``) are the command line's."""
    shown = options_from(SqlOptions, options, keywords)

    def write(reader: Reader) -> Printed:
        columns, chunks = run_query(reader, query)
        return write_rows(shown.format, columns, chunks, out, max_rows=shown.max_rows, width=width)
    return _Interruptible(store, write).run()


def run_query(store: Reader, query: str) -> tuple[list[str], Iterator[list[tuple]]]:
    """The query's columns and its rows a chunk at a time, under `contam sql`'s rule; refusals
    and errors (while it runs or while its rows are fetched) as UserError."""
    with _as_user_errors():
        columns, chunks = store.checked_chunks(query)
    return columns, _fetched(chunks)


def _fetched(chunks: Iterator[list[tuple]]) -> Iterator[list[tuple]]:
    with _as_user_errors():
        yield from chunks


@contextmanager
def _as_user_errors() -> Iterator[None]:
    try:
        yield
    except duckdb.Error as exc:  # DuckDB's whole message: its "Did you mean" hint and caret line
        raise LinedError(f"query failed: {exc}") from None
    except RuntimeError as exc:  # DuckDB's answer to Ctrl-C: the CLI's one "interrupted" line
        if "interrupted" in str(exc).lower():
            raise KeyboardInterrupt from None
        raise


class _Interruptible:
    """``work`` on the store, on a worker thread that the calling thread interrupts on Ctrl-C.

    The waiting is on an Event the worker sets when it is done, not on ``Thread.join``: a join
    that Ctrl-C interrupts can leave the thread marked as stopped while it still runs (CPython
    3.11), and an interpreter that shuts down under a running DuckDB query aborts."""

    def __init__(self, store: str | Path, work: Callable[[Reader], Printed]) -> None:
        self._store, self._work = store, work
        self._reader: Reader | None = None
        self._stopped, self._done = threading.Event(), threading.Event()
        self._result: Printed | None = None
        self._error: BaseException | None = None

    def run(self) -> Printed:
        threading.Thread(target=self._in_worker, name="contam-sql", daemon=True).start()
        try:
            while not self._done.wait(_POLL_S):
                pass
        except KeyboardInterrupt:
            self._stop()
            raise
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def _in_worker(self) -> None:
        try:
            with reading(self._store) as reader:
                self._reader = reader
                if not self._stopped.is_set():
                    self._result = self._work(reader)
        except BaseException as exc:  # handed to the waiting thread, which raises it
            self._error = exc.with_traceback(None)
        finally:
            self._done.set()

    def _stop(self) -> None:
        """Interrupt DuckDB until the worker is done: an interrupt that lands between two of its
        statements (the check, the query) is repeated for the next one."""
        self._stopped.set()
        deadline = time.monotonic() + _STOP_WAIT_S
        while not self._done.is_set() and time.monotonic() < deadline:
            reader = self._reader
            if reader is not None:
                reader.interrupt()
            self._done.wait(_POLL_S)
