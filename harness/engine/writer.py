"""The single writer: every row of a run reaches the store through one task.

A full disk does not lose what was received: the batch that could not be committed (and every
reply after it) is held in memory, the job says ``disk full: waiting for space (N answers held)``
once, and the commit is tried again every few seconds until it goes through, the run going on (or
its end waiting) meanwhile. Ctrl-C (:meth:`BatchWriter.stop_waiting`: the engine's signal watcher
during the run, the writer's own once the engine has ended) first puts the answers held in memory
into the journal and stops the writer as any other failed write does; where the journal has no
room either, the writer says so in one line and waits on, and only a second Ctrl-C gives them up.

Design notes: ARCHITECTURE.md, The writer.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import duckdb
import anyio.lowlevel
from anyio.abc import TaskGroup

from contam.harness.errors import first_line
from contam.harness.store.journal import Journal, Rows, journal_path, merge_writes, reply_key
from contam.harness.store import Store, insert_statement
from contam.harness.store.memory import within_bounds

__all__ = ["BatchWriter", "Rows", "insert_statements"]


class BatchWriter:
    """``async with BatchWriter(store) as writer: await writer.write({"answers": [...]})``."""

    def __init__(self, store: Store, *, max_writes: int = 50, max_delay_s: float = 1.0,
                 min_age_s: float = 0.25, buffer: int = 4096, journal: bool = True,
                 ctrl_c: bool = False) -> None:
        self.store = store
        self.journal: Journal | None = None
        self._use_journal = journal
        self._watch_ctrl_c = ctrl_c  # while closing, Ctrl-C is the writer's (the engine has ended)
        self.max_writes = max_writes
        self.max_delay_s = max_delay_s
        self.min_age_s = min_age_s
        self.buffer = buffer
        self.rows_committed = 0
        self.batches_committed = 0
        self._pending: list[Rows] = []  # writes not taken by a commit yet, in order
        self._first_at = 0.0  # loop time of the oldest pending write
        self._wake = anyio.Event()  # set when the drain task has reason to look again
        self._room = anyio.Event()  # set when a commit takes the pending writes
        self._closed = False
        self._commit_failed = False
        self._urgent = False  # a write_durably is waiting: commit without gathering
        self._committed = anyio.Event()  # set after each commit
        self._task_group: TaskGroup | None = None
        self.failure: str | None = None  # why writing stopped (a full disk, the store removed)
        self.on_failure: Callable[[], None] = lambda: None  # the job stops sending (drain)
        self.on_waiting: Callable[[str], None] = _say  # "disk full: waiting for space (...)"
        self.unkept = 0  # replies received but neither committed nor journaled
        self._in_journal = 0  # replies journaled since the last commit
        self._unjournaled: list[Rows] = []  # replies pending that are not in the journal either
        self._identity: tuple[int, int] | None = None  # the store file's (device, inode)
        self._held = False  # the batch being committed waited for space on a full disk
        self._ctrl_c = 0  # Ctrl-C presses so far (stop_waiting calls)
        self._said_unjournaled = False  # "Ctrl-C again gives them up" was said
        self._drained = False  # the drain task has ended
        self._ctrl_c_scope: anyio.CancelScope | None = None  # the watcher while closing

    async def write(self, rows: Rows) -> None:
        """Queue the rows of one finished attempt. Returns at once, without yielding to the event
        loop (so it is no cancellation point), unless ``buffer`` writes are already waiting; then
        it waits, shielded, for the next commit to take them (back-pressure)."""
        if len(self._pending) >= self.buffer:
            self._wake.set()  # commit now, whatever min_age_s says
            with anyio.CancelScope(shield=True):
                while len(self._pending) >= self.buffer and not self._closed:
                    await self._room.wait()
        if self._closed:
            raise anyio.ClosedResourceError("the writer is closed")
        journaled = self._journal(rows)
        if self.failure is not None:  # nothing more is committed: the journal is all there is
            self.unkept += not journaled and reply_key(rows) is not None
            return
        if not journaled and reply_key(rows) is not None:
            self._unjournaled.append(rows)
        if not self._pending:
            self._first_at = anyio.current_time()
            self._wake.set()  # the drain task starts the max_delay_s clock
        self._pending.append(rows)
        if len(self._pending) == self.max_writes:
            self._wake.set()

    def _journal(self, rows: Rows) -> bool:
        """Append a reply's rows to the journal; False when there is none to keep or the write
        failed (a full disk: that stops the writer)."""
        if self.journal is None or reply_key(rows) is None or self._store_gone():
            return False
        try:
            self.journal.append(rows)
            self._in_journal += 1
            return True
        except OSError as exc:
            if not _disk_full(exc):  # a full disk: the reply waits in memory for its commit
                self._fail(_write_failed(self.store.path, exc))
            return False

    async def write_durably(self, rows: Rows) -> None:
        """Queue the rows and return once they are committed, without waiting for a batch to
        gather: for what must survive a kill the instant after (a batch job's id)."""
        await self.write(rows)
        target = self.batches_committed + 1  # the next batch to be taken holds these rows
        self._urgent = True
        self._wake.set()
        with anyio.CancelScope(shield=True):
            while self.batches_committed < target and not self._closed and self.failure is None:
                await self._committed.wait()

    def stop_waiting(self) -> None:
        """Ctrl-C: wait for space no longer once the answers held are in the journal (a full disk
        then stops the writer, as any failed write); a second press gives up what is not."""
        self._ctrl_c += 1
        self._wake.set()

    async def __aenter__(self) -> "BatchWriter":
        info = os.stat(self.store.path)
        self._identity = (info.st_dev, info.st_ino)
        if self._use_journal:
            self.journal = Journal(journal_path(self.store.path))
        self.store.single_threaded(True)
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._task_group.start_soon(self._drain)
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        assert self._task_group is not None
        if self._watch_ctrl_c and threading.current_thread() is threading.main_thread():
            with anyio.CancelScope(shield=True):  # listening before closing, even if cancelled
                await self._task_group.start(self._ctrl_c_while_closing)
        self._closed = True  # the drain task commits what is pending, then ends
        self._wake.set()
        self._room.set()
        try:
            return await self._task_group.__aexit__(*exc_info)
        finally:
            with contextlib.suppress(duckdb.Error):  # a store that failed may refuse even this
                self.store.single_threaded(False)
            if self.journal is not None:
                self.journal.close(committed=not self._pending and not self._commit_failed
                                   and self.failure is None)

    async def _ctrl_c_while_closing(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """The engine's signal watcher has ended with it: while the last commits may still wait
        for space, Ctrl-C (or SIGTERM) is :meth:`stop_waiting` here too; ends with the drain."""
        with anyio.CancelScope() as self._ctrl_c_scope, \
                anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            task_status.started()
            if self._drained:
                return
            async for _ in signals:
                self.stop_waiting()

    async def _drain(self) -> None:
        try:
            await self._commit_all()
        finally:
            self._drained = True
            if self._ctrl_c_scope is not None:
                self._ctrl_c_scope.cancel()

    async def _commit_all(self) -> None:
        with anyio.CancelScope(shield=True):
            while batch := await self._next_batch():
                unjournaled, self._unjournaled = self._unjournaled, []
                if not await self._commit_batch(batch, unjournaled):
                    continue
                if self.journal is not None and not self._held:
                    # Nothing awaited between taking the batch and committing it, so no write
                    # came in meanwhile: every journaled reply is in the store now. (After a
                    # wait for space, some may not be: the journal stays; a replay skips what
                    # the store has.)
                    self.journal.clear()
                    self._in_journal = 0
                self.rows_committed += sum(len(rows) for writes in batch for rows in writes.values())
                self.batches_committed += 1
                committed, self._committed = self._committed, anyio.Event()
                committed.set()
                await anyio.lowlevel.checkpoint()  # let the workers run before the next batch

    async def _commit_batch(self, batch: list[Rows], unjournaled: list[Rows]) -> bool:
        """Commit a batch. On a full disk, say so once, hold the batch and try again every
        SPACE_RETRY_S until it goes in; on another failed write, a store that is gone, or Ctrl-C
        while it waits (:meth:`_may_give_up`), stop the writer instead (:meth:`_give_up`)."""
        self._held = False
        while (error := self._try_commit(batch)) is not None:
            if not _disk_full(error) or self._may_give_up(unjournaled):
                return self._give_up(error, unjournaled)
            if not self._held:
                self._held = True
                held = sum(reply_key(rows) is not None for rows in [*batch, *self._pending])
                self.on_waiting(f"disk full: waiting for space ({held} answer"
                                f"{'s' if held != 1 else ''} held)")
            pressed = self._ctrl_c
            with anyio.move_on_after(SPACE_RETRY_S):
                await self._until(lambda: self._ctrl_c != pressed)
        return True

    def _may_give_up(self, unjournaled: list[Rows]) -> bool:
        """After Ctrl-C, whether the writer may stop: once every answer held in memory is in the
        journal (the next command recovers it), or at a second Ctrl-C. Until then it says, once,
        that it waits on."""
        if self._ctrl_c == 0:
            return False
        if self._ctrl_c > 1 or (self._journal_held(unjournaled)
                                and self._journal_held(self._unjournaled)):
            return True
        if not self._said_unjournaled:
            self._said_unjournaled = True
            held = len(unjournaled) + len(self._unjournaled)
            self.on_waiting(f"disk full: the journal has no room for the {held} answer"
                            f"{'s' if held != 1 else ''} held either: still waiting for space "
                            "(Ctrl-C again gives them up)")
        return False

    def _journal_held(self, held: list[Rows]) -> bool:
        """Move held replies into the journal, oldest first; True once none is left."""
        while held:
            if self.journal is None:
                return False
            try:
                self.journal.append(held[0])
            except OSError:
                return False
            self._in_journal += 1
            del held[0]
        return True

    def _try_commit(self, batch: list[Rows]) -> BaseException | str | None:
        """None once committed; else what stopped it (an exception, or the failure's words)."""
        if self.failure is not None or self._store_gone() is not None:
            return self.failure
        try:
            self._commit(insert_statements(batch))
            return None
        except (duckdb.Error, OSError) as exc:
            return exc

    def _give_up(self, error: BaseException | str, unjournaled: list[Rows]) -> bool:
        """Stop writing: the journal keeps what it has for a replay; count the batch's replies
        that it does not hold either."""
        if isinstance(error, BaseException):
            self._fail(_write_failed(self.store.path, error))
        self._commit_failed = True
        self.unkept += len(unjournaled)
        return False

    def _store_gone(self) -> str | None:
        """Why the store is no longer where it was opened (its file or folder removed or
        replaced: DuckDB would go on writing into an unlinked file); None while it is there."""
        try:
            info = os.stat(self.store.path)
            if self._identity in (None, (info.st_dev, info.st_ino)):
                return None
        except OSError:
            pass
        self._fail(f"{self.store.path}: the store (or its folder) was removed or replaced during "
                   "the run, so what the run wrote went with it")
        return self.failure

    def failure_line(self) -> str | None:
        """The one line a job ends with when writing stopped; None when it did not."""
        if self.failure is None:
            return None
        lost = (f"{self.unkept} received answer{'s' if self.unkept != 1 else ''} could not be "
                "kept (the next run asks them again)") if self.unkept else \
            "every received answer was kept"
        kept = (f"; the journal beside the store holds {self._in_journal} more, which the next "
                "contam command recovers") if self._in_journal and "removed" not in self.failure \
            else ""
        fix = "restore it" if "removed" in self.failure else "free some space"
        return f"{self.failure}: stopped sending; {lost}{kept}; {fix}, then run the same " \
            "command again"

    def _fail(self, reason: str) -> None:
        """Stop: commit nothing more, and have the job send nothing more (``on_failure``)."""
        if self.failure is not None:
            return
        self.failure = reason
        committed, self._committed = self._committed, anyio.Event()
        committed.set()  # a write_durably waiting for its commit learns there will be none
        self.on_failure()

    async def _next_batch(self) -> list[Rows]:
        """The next batch: waits for a first write, then until ``max_writes`` writes are waiting
        and the first is ``min_age_s`` old, or until it is ``max_delay_s`` old, whichever comes
        first; then takes everything pending. Empty when the writer is closed and nothing is
        pending."""
        await self._until(lambda: bool(self._pending) or self._closed)
        with anyio.move_on_at(self._first_at + self.max_delay_s):
            await self._until(lambda: len(self._pending) >= self.max_writes or self._closed
                              or self._urgent)
            with anyio.move_on_at(self._first_at + self.min_age_s):
                await self._until(lambda: self._closed or len(self._pending) >= self.buffer
                                  or self._urgent)
        batch, self._pending, self._urgent = self._pending, [], False
        room, self._room = self._room, anyio.Event()
        room.set()
        return batch

    async def _until(self, condition: Callable[[], bool]) -> None:
        # Writes only set the event on their way past a threshold, so the drain task wakes about
        # once per batch, not once per write.
        while not condition():
            self._wake = anyio.Event()
            await self._wake.wait()

    def _commit(self, statements: list[tuple[str, list]]) -> None:
        """One transaction, on the event loop's thread (see the module docstring), with DuckDB's
        memory bounded (``COMMIT_MEMORY``)."""
        within_bounds(self.store, COMMIT_MEMORY, lambda: self._transaction(statements))

    def _transaction(self, statements: list[tuple[str, list]]) -> None:
        with self.store.transaction() as con:
            for sql, parameters in statements:
                con.execute(sql, parameters)


# DuckDB's memory limit while a batch is committed. The commit's checkpoint (past 16 MB of WAL)
# loads blocks of the tables it appends to, and the buffer pool would keep them all: it grew
# with the run (12 MB at 200,000 answers). Lowering the limit lets them go; between commits it is
# DuckDB's own again, for the reads the job's host serves. A commit DuckDB cannot make under it
# is made again under its own limit (None), never given up for it.
COMMIT_MEMORY = ("32MB", None)


SPACE_RETRY_S = 2.0  # how often a commit is tried again while the disk is full


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _disk_full(exc: BaseException) -> bool:
    return getattr(exc, "errno", None) == errno.ENOSPC or "No space left" in str(exc)


def _write_failed(path: Any, exc: BaseException) -> str:
    """What stopped the writer, in words: a full disk said as such."""
    if _disk_full(exc):
        return f"{path}: the disk is full (no space left on its file system)"
    return f"{path}: writing the store failed ({first_line(exc)})"


def insert_statements(writes: Sequence[Rows]) -> list[tuple[str, list]]:
    """One ``INSERT`` per table for a batch of writes (:func:`contam.harness.store.insert_statement`),
    built apart from its execution (the drain task runs it)."""
    return [insert_statement(table, rows) for table, rows in merge_writes(writes).items() if rows]
