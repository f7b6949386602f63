"""The single writer: every row of a run reaches the store through one task.

Lanes call :meth:`BatchWriter.write` with the rows of one finished attempt (``{table: [row, ...]}``);
the rows travel through an anyio memory object stream to one task that commits them with
:meth:`Store.append_batch` (``Store.append``'s rows, one INSERT per table, a third of its cost)
inside one :meth:`Store.transaction` per batch. A commit starts as soon as ``max_rows`` rows are
waiting, or ``max_delay_s`` after the first of them, whichever comes first. The rows of one
``write`` always land in the same transaction, so an answer is never committed without its
attempt row (or the reverse).

A SIGKILL at any moment loses at most what is not committed yet: the batch being committed and
the rows that arrived meanwhile (about one batch). Leaving the
``async with`` block, normally, by an exception or by cancellation, commits everything written
before: the draining task is shielded and ends only when the stream is closed and empty.

The commit runs in a worker thread so the event loop keeps serving replies meanwhile; while the
writer is open, no other code may use the store's connection (``store.con``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream

from harness.store import Store

__all__ = ["BatchWriter", "Rows"]

Rows = Mapping[str, Sequence[Mapping[str, Any]]]  # table name -> rows


class BatchWriter:
    """``async with BatchWriter(store) as writer: await writer.write({"answers": [...]})``."""

    def __init__(self, store: Store, *, max_rows: int = 50, max_delay_s: float = 1.0,
                 buffer: int = 4096) -> None:
        self.store = store
        self.max_rows = max_rows
        self.max_delay_s = max_delay_s
        self.rows_committed = 0
        self.batches_committed = 0
        self._send, self._receive = anyio.create_memory_object_stream[Rows](buffer)
        self._task_group: TaskGroup | None = None

    async def write(self, rows: Rows) -> None:
        """Queue rows; waits only when ``buffer`` writes are already queued (back-pressure)."""
        await self._send.send(rows)

    async def __aenter__(self) -> "BatchWriter":
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._task_group.start_soon(self._drain)
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        self._send.close()  # the drain task commits what is queued, then ends
        assert self._task_group is not None
        return await self._task_group.__aexit__(*exc_info)

    async def _drain(self) -> None:
        with anyio.CancelScope(shield=True):
            async with self._receive:
                while batch := await self._gather(self._receive):
                    await anyio.to_thread.run_sync(self._commit, batch)

    async def _gather(self, receive: MemoryObjectReceiveStream[Rows]) -> dict[str, list]:
        """The next batch: waits for a first write, then until ``max_rows`` rows are waiting or
        ``max_delay_s`` has passed, then takes everything already queued as well (when the
        commits fall behind a burst, one bigger commit catches up sooner than several of 50;
        those rows are in memory either way). Empty when the stream is closed and drained."""
        batch: dict[str, list] = {}
        count, deadline = 0, math.inf
        while count < self.max_rows and (rows := await self._next(receive, deadline)) is not None:
            count += self._add(batch, rows)
            if deadline == math.inf:
                deadline = anyio.current_time() + self.max_delay_s
        while count and (rows := self._queued(receive)) is not None:
            count += self._add(batch, rows)
        return batch

    @staticmethod
    def _add(batch: dict[str, list], rows: Rows) -> int:
        added = 0
        for table, table_rows in rows.items():
            batch.setdefault(table, []).extend(table_rows)
            added += len(table_rows)
        return added

    @staticmethod
    def _queued(receive: MemoryObjectReceiveStream[Rows]) -> Rows | None:
        try:
            return receive.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream):
            return None

    @classmethod
    async def _next(cls, receive: MemoryObjectReceiveStream[Rows], deadline: float) -> Rows | None:
        """The next write, or None at the deadline or at the end of the stream."""
        rows = cls._queued(receive)  # the cheap path while replies pour in
        if rows is not None:
            return rows
        with anyio.move_on_after(deadline - anyio.current_time()):
            try:
                return await receive.receive()
            except anyio.EndOfStream:
                return None
        return None

    def _commit(self, batch: dict[str, list]) -> None:
        with self.store.transaction():
            self.store.append_batch(batch)
        self.rows_committed += sum(len(rows) for rows in batch.values())
        self.batches_committed += 1

