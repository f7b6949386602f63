"""The DuckDB store: opening it (and waiting for a short-lived reader's lock), migrating it to the
schema of :mod:`contam.harness.store.schema`, append-only writes and reads.

Nothing is ever UPDATEd or DELETEd: a correction is a newer row (higher ``seq``) and the
``latest_*`` views pick it. One process writes; inside it :class:`BatchWriter` (see
``contam.harness.engine.writer``) is the single task that calls :meth:`Store.append`.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

from contam.harness.errors import UserError, first_line
from contam.harness.store import DEFAULT_STORE
from contam.harness.store.frames import dict_rows, joined, with_categories
from contam.harness.store.journal import journal_path, replay
from contam.harness.store.limits import current_limit, lower_limit, put_back_limit
from contam.harness.store.schema import MIGRATIONS, TABLE_COLUMNS
from contam.harness.store.views import cells_view_current, cells_view_sql
from contam.harness.store.wanted import ask_for, withdraw_ask
from contam.harness.text import visible

if TYPE_CHECKING:  # the importers hand over DataFrames; opening a store needs no pandas
    import pandas as pd

    from contam.harness.store.discovery import Holder

__all__ = ["Store", "DEFAULT_STORE", "utc_now", "MIGRATIONS", "TABLE_COLUMNS", "insert_statement",
           "StoreInUse", "LOCK_WAIT_S", "transaction", "query_parameters"]

# How long a writer's open waits for a store another process has open (a `contam sql`, a view's
# request): such readers hold it for moments, a job for hours.
LOCK_WAIT_S = 3.0


def insert_statement(table: str, rows: Sequence[Mapping[str, Any]]) -> tuple[str, list]:
    """``INSERT`` of rows (dicts keyed by column name): missing columns are NULL, unknown ones
    refused, and a column that is NULL in every row is left out (NULL is every column's default
    but ``seq``'s)."""
    known = TABLE_COLUMNS[table]
    unknown = set().union(*(row.keys() for row in rows)) - set(known)
    if unknown:
        raise ValueError(f"{table}: unknown columns {sorted(unknown)}")
    # Each column travels as one list parameter that DuckDB unnests, with no DataFrame in
    # between: ~1.2 ms a statement against ~3.5 ms through pandas for 25 answers. That fixed
    # cost is what bounds the single writer.
    columns, values = [], []
    for column in known:
        column_values = [row.get(column) for row in rows]
        if any(value is not None for value in column_values):
            columns.append(column)
            values.append(column_values)
    if not columns:  # rows with nothing but NULLs still count
        columns, values = [known[0]], [[None] * len(rows)]
    select = ", ".join(f"unnest(${n}) AS {c}" for n, c in enumerate(columns, start=1))
    return f"INSERT INTO {table} BY NAME SELECT {select}", values


_FRAME_CHUNK_VECTORS = 10  # DuckDB vectors (2,048 rows each) a chunk of a frame holds
# DuckDB's memory limits, tried in turn, for a frame's query and for every read of a lean store
# (:meth:`Store.lean`): the report's reads at a million cells fit the first (its cells read a
# range of items at a time); a query that does not is tried again under more, then under DuckDB's
# default. Without a limit DuckDB's buffer pool and allocator keep what each query took.
READ_MEMORY = ("64MB", "160MB", "512MB")
_T = TypeVar("_T")


def _frame_chunks(cursor: duckdb.DuckDBPyConnection) -> Iterator["pd.DataFrame"]:
    """The result's chunks up to DuckDB's empty one, which is kept only when it is the first
    (an empty result keeps its columns)."""
    chunk = cursor.fetch_df_chunk(_FRAME_CHUNK_VECTORS)
    yield chunk
    while len(chunk):
        chunk = cursor.fetch_df_chunk(_FRAME_CHUNK_VECTORS)
        if len(chunk):
            yield chunk


def utc_now() -> dt.datetime:
    """Naive UTC, as DuckDB's TIMESTAMP stores it."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class StoreInUse(UserError):
    """The store is open in another process (or, read-only, in this one for writing).
    ``found`` is the holder the discovery file names (:mod:`contam.harness.store.discovery`), if any."""

    def __init__(self, path: Path, pid: int, holder: str, found: Holder | None = None) -> None:
        self.path, self.pid, self.holder, self.found = path, pid, holder, found
        self.who = f"pid {pid} ({holder})"
        super().__init__(f"{path}: locked by {self.who}; try again when it has finished")


class Store:
    """A connection to one store file. A ``read_only`` store never writes, with one exception: a
    store an older contam made (behind :data:`MIGRATIONS`) is first migrated, opened for writing
    for that moment (the migrations only add), so that what this contam reads is there.

    A missing file is created only with ``create=True``, which only the commands that start a
    study pass (``import items``, ``run``, ``demo``, ``probe``, ``bench``): anywhere else a
    mistyped ``--store`` is ``PATH: no such store``, and leaves no file behind. A writer's open
    waits up to ``lock_wait_s`` (default :data:`LOCK_WAIT_S`) for a store that another process
    has open, having asked a `contam view` that keeps it open to let go
    (:mod:`contam.harness.store.wanted`); a reader's open does not wait for a job that serves reads
    (:mod:`contam.harness.store.access` reads through it)."""

    def __init__(self, path: str | Path = DEFAULT_STORE, *, read_only: bool = False,
                 create: bool = False, lock_wait_s: float | None = None) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.replayed = self.journal_skipped = 0
        self._locked_down = False
        self._one_thread = 0  # holds of single_threaded(True), from the job and its readers
        self._lean = False  # reads under READ_MEMORY's limits (lean())
        self._threads_lock = threading.Lock()
        if not self.path.exists() and (read_only or not create):
            raise UserError(f"{self.path}: no such store")
        _refuse_odd_file(self.path)
        wait = LOCK_WAIT_S if lock_wait_s is None else lock_wait_s
        self.con = self._connect(wait)
        try:
            if read_only:
                self._catch_up(wait)
            else:
                self.migrate()
                self._replay()
        except BaseException:  # a refused journal: the file is let go of, as if never opened
            self.con.close()
            raise

    def _replay(self) -> None:
        """Recover the replies a killed run received but had not committed; the journal's lines
        that were skipped are said on stderr, in one line, whichever command opened the store."""
        replayed = replay(self)
        self.replayed, self.journal_skipped = replayed.kept, replayed.skipped
        notice = replayed.notice(journal_path(self.path))
        if notice:
            print(visible(notice), file=sys.stderr)

    def _connect(self, wait_s: float) -> duckdb.DuckDBPyConnection:
        if not self.read_only:
            self._check_writable()
        deadline = time.monotonic() + wait_s
        asked = False
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=self.read_only)
            except duckdb.Error as exc:  # not a DuckDB file, locked by another process, ...
                lock = _lock(exc)
                if lock is None:
                    raise UserError(f"{self.path}: cannot open store ({first_line(exc)})") from None
                in_use = _in_use(self.path, *lock)
                if time.monotonic() >= deadline or (self.read_only and in_use.found):
                    raise in_use from None  # a job's host serves the reads (store/access.py)
                if not asked:  # a `contam view` keeping the store open lets go (store/wanted.py)
                    ask_for(self.path)
                    asked = True
                time.sleep(0.1)
                continue
            if asked:
                withdraw_ask(self.path)
            return con

    def _check_writable(self) -> None:
        """A writer needs its folder (for the store, its WAL and the reply journal) and the file
        writable; found out here, before anything is sent or half-written."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=self.path.parent):
                pass
            if self.path.exists():
                self.path.open("r+b").close()
        except (FileExistsError, NotADirectoryError):  # mkdir met a file on the way
            raise UserError(f"{self.path}: cannot write the store there "
                            f"({self._file_in_the_way()} is a file, not a folder)") from None
        except OSError as exc:
            raise UserError(f"{self.path}: cannot write the store there "
                            f"({exc.strerror or type(exc).__name__})") from None

    def _file_in_the_way(self) -> Path:
        return next((p for p in self.path.parents if p.exists() and not p.is_dir()),
                    self.path.parent)

    # -- schema -------------------------------------------------------------------------------

    def migrate(self) -> list[int]:
        self.con.execute("CREATE TABLE IF NOT EXISTS _migrations "
                         "(version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMP)")
        done = self._applied()
        applied = []
        for version, name, sql in MIGRATIONS:
            if version not in done:
                self._apply(version, name, sql)
                applied.append(version)
        if not cells_view_current(self.con):
            with self.transaction():
                self.con.execute(cells_view_sql())
        return applied

    def _catch_up(self, wait_s: float) -> None:
        """Migrate a store an older contam made (opened read-only here) before it is read."""
        try:
            done = self._applied()
        except duckdb.CatalogException:  # no contam store (an empty DuckDB file): left as it is
            return
        if all(version in done for version, _, _ in MIGRATIONS) and cells_view_current(self.con):
            return
        self.con.close()
        try:
            Store(self.path).close()
        except UserError as exc:  # not writable here, or another process has it open
            reason = (f"locked by {exc.who}" if isinstance(exc, StoreInUse)
                      else str(exc).removeprefix(f"{self.path}: "))
            raise UserError(f"{self.path}: made by an older contam, and upgrading it failed "
                            f"({reason}); any contam command upgrades it (the migrations only add "
                            "tables) once it can write the file while no other process has it "
                            "open, or work on a copy") from None
        self.con = self._connect(wait_s)

    def _applied(self) -> set[int]:
        return {row[0] for row in self.con.execute("SELECT version FROM _migrations").fetchall()}

    def _apply(self, version: int, name: str, sql: str) -> None:
        with self.transaction():
            self.con.execute(sql)
            self.con.execute("INSERT INTO _migrations VALUES (?, ?, ?)", [version, name, utc_now()])

    # -- writing ------------------------------------------------------------------------------

    def transaction(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        return transaction(self.con)

    def append(self, table: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert rows (dicts keyed by column name) in one statement (:func:`insert_statement`)."""
        if rows:
            self.con.execute(*insert_statement(table, rows))
        return len(rows)

    def single_threaded(self, on: bool, con: duckdb.DuckDBPyConnection | None = None) -> None:
        """DuckDB on one thread (``on``) or back to its default: a job's writer commits small
        batches, where more threads only add overhead (see harness/engine/writer.py), and a
        store host works a reader's query on the reader's thread alone (harness/store/host.py).
        Holds nest, from any thread: DuckDB's default comes back when the last lets go. ``con``:
        a cursor of this store's to say it on, from a thread other than ``con``'s own."""
        with self._threads_lock:
            if on and not self._one_thread:
                (con or self.con).execute("SET threads = 1")
            self._one_thread += 1 if on else -1
            if not on and not self._one_thread:
                (con or self.con).execute("RESET threads")

    @contextmanager
    def memory_limit(self, limit: str | None, *, if_possible: bool = False) -> Iterator[None]:
        """DuckDB's memory limit set to ``limit`` (e.g. "64MB"; None: DuckDB's own) for a while,
        then put back (:func:`put_back_limit`). Its buffer pool otherwise keeps every block a job
        reads or writes (up to 80% of RAM), so a pass over a million cells would weigh what the
        store weighs. ``if_possible``: where DuckDB cannot free enough to lower it now (blocks held
        by a read the job's host is serving), go on under the limit as it is rather than fail."""
        previous = current_limit(self.con)
        if limit is None:
            self.con.execute("RESET memory_limit")
        elif not lower_limit(self.con, limit, if_possible=if_possible):
            yield
            return
        try:
            yield
        finally:
            put_back_limit(self.con, previous)

    @contextmanager
    def one_thread(self) -> Iterator[None]:
        """DuckDB on one thread for the block (:meth:`single_threaded`)."""
        self.single_threaded(True)
        try:
            yield
        finally:
            self.single_threaded(False)

    def checkpoint(self) -> None:
        """Write what the WAL holds into the file now (DuckDB does it on its own past 16 MB of
        WAL, and when the store closes)."""
        self.con.execute("CHECKPOINT")

    def append_query(self, table: str, select_sql: str, **frames: pd.DataFrame) -> int:
        """``INSERT INTO table BY NAME <select_sql>`` with the given DataFrames registered by name."""
        for name, frame in frames.items():
            self.con.register(name, frame)
        try:
            before = self.count(table)
            self.con.execute(f"INSERT INTO {table} BY NAME {select_sql}")
            return self.count(table) - before
        finally:
            for name in frames:
                self.con.unregister(name)

    # -- reading ------------------------------------------------------------------------------

    def count(self, table: str) -> int:
        return self.con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]

    def query(self, sql: str, params: Iterable[Any] | Mapping[str, Any] | None = None) -> list[tuple]:
        """Rows as tuples; ``params`` are positional (``$1``) or, as a mapping, named (``$name``)."""
        return self._read(lambda: self.con.execute(sql, query_parameters(params)).fetchall())

    def query_dicts(self, sql: str,
                    params: Iterable[Any] | Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        return self._read(lambda: dict_rows(self.con.execute(sql, query_parameters(params))))

    def query_df(self, sql: str, params: Iterable[Any] | Mapping[str, Any] | None = None,
                 categories: Sequence[str] = ()) -> "pd.DataFrame":
        """The result as DuckDB's ``df()`` gives it; with ``categories``, those string columns as
        categoricals, converted a chunk at a time (:mod:`contam.harness.store.frames`), under
        READ_MEMORY's limits (DuckDB's work on a big frame's query spills to disk past them)."""
        if not categories:
            return self._read(lambda: self.con.execute(sql, query_parameters(params)).df())
        return self._under_read_limits(lambda: self._frame_with_categories(sql, params, categories))

    def lean(self) -> None:
        """Every read from now on under READ_MEMORY's limits, and DuckDB's buffer pool held to
        the first between reads: a report's reads at a million cells would otherwise add up to
        hundreds of MB that DuckDB keeps."""
        self._lean = True
        lower_limit(self.con, READ_MEMORY[0], if_possible=True)  # else each read still lowers it

    def _read(self, work: Callable[[], _T]) -> _T:
        return self._under_read_limits(work) if self._lean else work()

    def _under_read_limits(self, work: Callable[[], _T]) -> _T:
        """``work`` under each of READ_MEMORY's limits in turn until one holds it (an operator
        that cannot spill refuses a lower one), else under DuckDB's default; the limit it had
        is put back."""
        for limit in READ_MEMORY:
            try:
                with self.memory_limit(limit):
                    return work()
            except duckdb.OutOfMemoryException:
                continue
        with self.memory_limit(None):
            return work()  # as much as it takes

    def _frame_with_categories(self, sql: str, params: Any, categories: Sequence[str]) -> "pd.DataFrame":
        cursor = self.con.execute(sql, query_parameters(params))
        return joined((with_categories(chunk, categories) for chunk in _frame_chunks(cursor)),
                      categories)

    def checked_query(self, query: str) -> tuple[list[str], list[tuple]]:
        """`contam sql`'s query (:mod:`contam.harness.store.readonly`): one read-only statement, with
        file and network access switched off and the configuration locked from then on."""
        columns, chunks = self.checked_chunks(query)
        return columns, [row for chunk in chunks for row in chunk]

    def checked_chunks(self, query: str) -> tuple[list[str], Iterator[list[tuple]]]:
        """:meth:`checked_query` with the rows fetched a chunk at a time as DuckDB streams them,
        so that a result of any size is never held whole."""
        from contam.harness.store.readonly import LOCKDOWN, check_query

        if not self.read_only:
            raise RuntimeError("checked_query needs a read-only store")
        check_query(self.con, query)
        if not self._locked_down:
            for setting in LOCKDOWN:
                self.con.execute(setting)
            self._locked_down = True
        cursor = self.con.execute(query)
        if cursor.description is None:
            return [], iter(())
        return [d[0] for d in cursor.description], _chunks(cursor)

    def interrupt(self) -> None:
        """Stop the query running on this store now (from another thread: Ctrl-C)."""
        self.con.interrupt()

    def item_ids(self) -> set[str]:
        return {row[0] for row in self.query("SELECT DISTINCT item_id FROM items")}

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _refuse_odd_file(path: Path) -> None:
    """A store is a regular file: a FIFO or a device would hang or endlessly feed whoever opens
    it, a folder is no store."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):  # to be created (or refused as it is made)
        return
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else ("a FIFO" if stat.S_ISFIFO(mode) else
                                                      "not a regular file")
        raise UserError(f"{path}: not a store (it is {kind}); a store is a DuckDB file")


_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")


def _lock(exc: duckdb.Error) -> tuple[int, str] | None:
    """The pid and program holding the store, if that is why DuckDB refused to open it."""
    message = str(exc)
    found = _LOCK_HOLDER.search(message)
    if found:
        return int(found["pid"]), Path(found["program"]).name
    if "different configuration than existing connections" in message:
        return os.getpid(), "this process"
    return None


def _in_use(path: Path, pid: int, program: str) -> StoreInUse:
    """A StoreInUse naming who holds the store: the discovery file's command where it names
    that process."""
    from contam.harness.store.discovery import find_holder

    found = find_holder(path)
    holder = f"contam {found.command}" if found is not None and found.pid == pid else program
    return StoreInUse(path, pid, holder, found)


def query_parameters(params: Iterable[Any] | Mapping[str, Any] | None) -> list | dict | None:
    """A query's parameters as DuckDB (and the host's JSON) take them: a mapping's (``$name``)
    as a dict, any other iterable's (``$1``) as a list."""
    if params is None or isinstance(params, Mapping):
        return dict(params) if params is not None else None
    return list(params)


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """BEGIN ... COMMIT on a connection or a cursor, or ROLLBACK on any exception: a refused file
    writes nothing."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


_CHUNK_ROWS = 10_000


def _chunks(cursor: duckdb.DuckDBPyConnection) -> Iterator[list[tuple]]:
    while chunk := cursor.fetchmany(_CHUNK_ROWS):
        yield chunk
