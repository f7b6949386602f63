"""The local provider's queue (:mod:`contam.providers.local`): requests made while the model is busy wait
here, and whichever waiting caller gets the model next answers as many of them as fit in one batch
(:func:`contam.providers.local_generate.generate_blocking`; a min-k text to score, a :class:`TextJob`,
goes in a batch of texts, :func:`contam.providers.local_logprobs.texts_logprobs_blocking`). No timer: a
lone request goes at once, and batches form only when requests pile up, as they do when a lane
runs several workers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio

from contam.providers.base import ProviderError, Reply, TextLogprobs
from contam.providers.local_generate import Job, Limits

__all__ = ["Batcher", "Waiting", "RunBatch", "TextJob", "ScoringLimits", "SCORING_ROWS"]

# A scoring batch holds rows x tokens x vocabulary float32 logits, and their log-softmax:
# 8 texts of 256 tokens over SmolLM2's 49k vocabulary is about 0.4 GB each.
SCORING_ROWS = 8


@dataclass(frozen=True)
class TextJob:
    """A text to score (the min-k probe): one row of a scoring batch."""

    text: str

    def sample_numbers(self) -> tuple[int, ...]:
        return (0,)


@dataclass(frozen=True)
class ScoringLimits:
    """A scoring batch's limits: its texts share the threads (and never a generation's batch)."""

    threads: int


RunBatch = Callable[[list[Any], Any], Awaitable[list[Any]]]


@dataclass(eq=False)
class Waiting:
    """A request waiting for the model, and what came of it."""

    job: Job | TextJob
    limits: Limits | ScoringLimits
    reply: Reply | TextLogprobs | None = None
    error: ProviderError | None = None
    max_rows: int | None = None  # a batch this one leads holds at most this many rows

    @property
    def rows(self) -> int:
        return len(self.job.sample_numbers())

    def outcome(self) -> Reply | TextLogprobs:
        if self.error is not None:  # a fresh exception per request: each has its own traceback
            raise type(self.error)(str(self.error), http_status=self.error.http_status)
        assert self.reply is not None
        return self.reply


class Batcher:
    """Requests made while the model is busy wait here; whichever waiting caller gets the model
    next answers as many of them as fit (same limits, at most ``rows`` rows, or the first one's
    ``max_rows``) in one batch. No timer: a lone request goes at once, and batches form only
    when requests pile up."""

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self.queue: list[Waiting] = []
        self._lock: anyio.Lock | None = None

    @property
    def lock(self) -> anyio.Lock:
        if self._lock is None:  # created here, inside the event loop that will use it
            self._lock = anyio.Lock()
        return self._lock

    async def answer(self, waiting: Waiting, run: RunBatch) -> Reply | TextLogprobs:
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
        for waiting, reply in zip(batch, replies):  # a row's own failure is that row's alone
            if isinstance(reply, ProviderError):
                waiting.error = reply
            else:
                waiting.reply = reply

    def _take(self) -> list[Waiting]:
        """The oldest waiting request and the next ones with its limits, while the rows fit."""
        first, batch, rows = self.queue[0], [], 0
        cap = first.max_rows or self.rows
        for waiting in list(self.queue):
            if waiting.limits == first.limits and (not batch or rows + waiting.rows <= cap):
                batch.append(waiting)
                rows += waiting.rows
                self.queue.remove(waiting)
        return batch
