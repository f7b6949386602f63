"""The local provider's queue (:mod:`providers.local`): requests made while the model is busy wait
here, and whichever waiting caller gets the model next answers as many of them as fit in one batch
(:func:`providers.local_generate.generate_blocking`). No timer: a lone request goes at once, and
batches form only when requests pile up, as they do when a lane runs several workers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from providers.base import ProviderError, Reply
from providers.local_generate import Job, Limits

__all__ = ["Batcher", "Waiting", "RunBatch"]

RunBatch = Callable[[list[Job], Limits], Awaitable[list[Reply]]]


@dataclass(eq=False)
class Waiting:
    """A request waiting for the model, and what came of it."""

    job: Job
    limits: Limits
    reply: Reply | None = None
    error: ProviderError | None = None

    @property
    def rows(self) -> int:
        return len(self.job.sample_numbers())

    def outcome(self) -> Reply:
        if self.error is not None:  # a fresh exception per request: each has its own traceback
            raise type(self.error)(str(self.error), http_status=self.error.http_status)
        assert self.reply is not None
        return self.reply


class Batcher:
    """Requests made while the model is busy wait here; whichever waiting caller gets the model
    next answers as many of them as fit (same limits, at most ``rows`` rows) in one batch. No
    timer: a lone request goes at once, and batches form only when requests pile up."""

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self.queue: list[Waiting] = []
        self._lock: anyio.Lock | None = None

    @property
    def lock(self) -> anyio.Lock:
        if self._lock is None:  # created here, inside the event loop that will use it
            self._lock = anyio.Lock()
        return self._lock

    async def answer(self, waiting: Waiting, run: RunBatch) -> Reply:
        """``waiting``'s reply, from a batch this caller or another one ran with ``run(jobs,
        limits)``."""
        self.queue.append(waiting)
        try:
            while waiting.reply is None and waiting.error is None:
                async with self.lock:
                    if waiting.reply is None and waiting.error is None:
                        await self._run_next(run)
        finally:
            if waiting in self.queue:  # cancelled while waiting
                self.queue.remove(waiting)
        return waiting.outcome()

    async def _run_next(self, run: RunBatch) -> None:
        batch = self._take()
        try:
            replies = await run([w.job for w in batch], batch[0].limits)
        except ProviderError as exc:
            for waiting in batch:
                waiting.error = exc
            return
        except BaseException:  # cancelled: the others go back to the front, for the next caller
            self.queue[:0] = batch
            raise
        for waiting, reply in zip(batch, replies):
            waiting.reply = reply

    def _take(self) -> list[Waiting]:
        """The oldest waiting request and the next ones with its limits, while the rows fit."""
        first, batch, rows = self.queue[0], [], 0
        for waiting in list(self.queue):
            if waiting.limits == first.limits and (not batch or rows + waiting.rows <= self.rows):
                batch.append(waiting)
                rows += waiting.rows
                self.queue.remove(waiting)
        return batch
