"""The per-request path of a lane: its workers pull tasks, and each task is attempted (admitted
by the lane's limits, sent to a replica, shielded, its reply checked and accepted), retried under
stamina when the error is retryable, and every attempt written as an ``attempts`` row.

:class:`LaneAttempts` is the half of a lane at work that runs once per request; the other half,
the lane's life cycle (start-up, preflight of its replicas, stop, drain), is ``_LaneRun`` in
:mod:`contam.harness.engine.lanes`, which builds the state this half reads.

Speed: the per-request path holds one cancel scope, two flag checks and a non-yielding write;
why each costs what it does is said where it is (``contam bench --emulator`` measures it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any, Protocol

import anyio
import anyio.lowlevel
import stamina

from contam.harness.config import ModelSpec
from contam.harness.engine.counters import LaneStats
from contam.harness.engine.failures import (
    RETRY_WAIT_INITIAL,
    RETRY_WAIT_JITTER,
    RETRY_WAIT_MAX,
    InternalError,
    WaitTooLong,
    failure_cause,
    retry_wait,
)
from contam.harness.engine.limits import LaneLimits
from contam.harness.engine.pool import set_worker_slot
from contam.harness.engine.replicas import Replica, ReplicaSet
from contam.harness.engine.tasks import Accept, Task
from contam.harness.engine.writer import BatchWriter, Rows
from contam.harness.errors import cause_line
from contam.harness.store import utc_now
from contam.providers.base import Provider, ProviderError, RateLimited, Reply, Request, Timeout, redact
from contam.providers.registry import check_first_reply

log = logging.getLogger(__name__)

__all__ = ["LaneAttempts", "EngineSide", "DEADLINE_MARGIN_S", "attempt_row"]

# Seconds the engine waits beyond ``spec.timeout_s`` before abandoning a request the provider's
# own timeout did not end (httpx times each phase, not the whole exchange).
DEADLINE_MARGIN_S = 5.0


class EngineSide(Protocol):
    """What the per-request path uses of its engine: the run's id, the caller's hook, the writer."""

    run_id: str
    accept: Accept
    writer: BatchWriter


class LaneAttempts:
    """The per-request path of one lane. The lane (``_LaneRun``) sets these attributes and
    defines ``_stop``; its workers run :meth:`_worker`."""

    engine: EngineSide
    spec: ModelSpec
    stats: LaneStats
    limits: LaneLimits
    replicas: ReplicaSet
    _tasks: Iterator[Task]
    _in_flight: set[anyio.CancelScope]  # the requests sent, for a second Ctrl-C to abandon
    _halted: bool  # stopped or draining: send nothing new, retry nothing
    _abandoned: bool

    def _stop(self, exc: BaseException) -> None:
        raise NotImplementedError

    async def _worker(self, slot: int) -> None:
        set_worker_slot(slot)  # this worker's own connection (see contam.harness.engine.pool)
        for task in self._tasks:
            await self._ask(task)

    async def _ask(self, task: Task) -> None:
        try:
            try:
                return await self._attempt(task, 1)
            except ProviderError as exc:
                if not exc.retryable:
                    raise
                await self._retry(task, exc)
        except ProviderError as exc:
            if exc.retryable:
                self.stats.failed += 1  # attempts used up: recorded, asked again next run
                self.stats.failures[failure_cause(exc)] += 1
                log.info("%s: item %s failed after all attempts (%s)", self.spec.name,
                         task.item_id, exc)
            else:
                self._stop(exc)

    async def _retry(self, task: Task, first: ProviderError) -> None:
        """Attempts 2..max_attempts under stamina. Most tasks never get here, so the first attempt
        runs without the retry machinery; stamina is shown that attempt's error first, so its
        backoff hook decides the wait before attempt 2 like any other."""
        pending = first
        async for attempt in stamina.retry_context(
                on=retry_wait, attempts=self.spec.max_attempts, timeout=None,
                wait_initial=RETRY_WAIT_INITIAL, wait_max=RETRY_WAIT_MAX,
                wait_jitter=RETRY_WAIT_JITTER):
            with attempt:
                if pending is not None:
                    error, pending = pending, None
                    raise error
                await self._attempt(task, attempt.num)

    async def _attempt(self, task: Task, number: int) -> None:
        # A stopped or draining lane has cancelled its workers, but admit() may not await at all
        # (no buckets, gate open) and the exchange is shielded: look before sending, and after
        # (no retry). A flag, not anyio's checkpoint_if_cancelled: this is the per-request path.
        await self._unless_halted()
        await self.limits.admit(task.request)
        # Several replicas all cooling down: wait for the first to reopen (one replica: the
        # lane's gate in admit() already held the request back).
        replica = await self.replicas.choose()
        await self._exchange(task, number, replica)
        await self._unless_halted()

    async def _unless_halted(self) -> None:
        if self._halted:
            await anyio.lowlevel.checkpoint()  # the workers' scope is cancelled: this raises

    async def _exchange(self, task: Task, number: int, replica: Replica) -> None:
        stats = self.stats
        stats.sent += 1
        stats.retries += number > 1
        stats.in_flight += 1
        replica.stats.in_flight += 1
        started_at, clock = utc_now(), time.perf_counter()
        try:
            try:
                reply = await self._generate(replica, task.request)
                latency = time.perf_counter() - clock
                rows = self._accept(replica.provider, task, reply, latency)
            except Exception as exc:
                await self._failed(task, number, started_at, time.perf_counter() - clock, exc,
                                   replica.url)
                raise
        finally:
            stats.in_flight -= 1
            replica.stats.in_flight -= 1
        ok = attempt_row(task, self.engine.run_id, number, started_at, latency, "ok",
                         reply.http_status, replica=replica.url)
        # BatchWriter.write does not yield (no cancellation point): the rows of a reply that
        # came back are queued even when the lane stops or the run is interrupted meanwhile.
        await self.engine.writer.write({**rows, "attempts": [*rows.get("attempts", ()), ok]})
        stats.done += 1

    async def _generate(self, replica: Replica, request: Request) -> Reply:
        """One request to ``replica``, which hears how it went (a failure cools it down)."""
        try:
            reply = await self._shielded(replica.provider, request)
        except Exception as exc:
            self.replicas.failed(replica, exc)
            raise
        self.replicas.answered(replica)
        return reply

    async def _shielded(self, provider: Provider, request: Request) -> Reply:
        """One request, shielded: once sent, it runs to its reply (or its deadline) and is
        written, even when the lane stops or the run is interrupted meanwhile. One cancel scope
        (shield and deadline together) per request: anyio's scopes are the engine's largest
        fixed cost per request after httpx itself."""
        deadline = self.spec.timeout_s + DEADLINE_MARGIN_S
        # time.monotonic() is asyncio's loop clock (anyio.current_time() costs a backend lookup).
        with anyio.CancelScope(shield=True, deadline=time.monotonic() + deadline) as scope:
            self._in_flight.add(scope)
            try:
                return await provider.generate(request)
            finally:
                self._in_flight.discard(scope)
        if self._abandoned:  # a second Ctrl-C cancelled it: nothing to record, no retry
            await anyio.lowlevel.checkpoint()
        raise Timeout(f"model {self.spec.name!r}: no reply within {deadline:g} s")

    def _accept(self, provider: Provider, task: Task, reply: Reply, latency: float) -> Rows:
        check_first_reply(provider, reply)  # every reply, the first included
        return self.engine.accept(task, reply, latency)

    async def _failed(self, task: Task, number: int, started_at: Any, latency: float,
                      exc: Exception, replica: str | None) -> None:
        """Record a failed attempt (the replica has already cooled down, see _generate). The
        caller re-raises."""
        error = exc if isinstance(exc, ProviderError) else InternalError(
            f"model {self.spec.name!r}: {cause_line(exc)}")
        if isinstance(error, RateLimited):
            self.stats.rate_limited += 1
        too_long = self._wait_too_long(error)
        log.info("%s: item %s attempt %d/%d%s: %s (HTTP %s)%s: %s", self.spec.name, task.item_id,
                 number, self.spec.max_attempts, f" via {replica}" if replica else "",
                 error.outcome, error.http_status or "-",
                 "" if error.retry_after_s is None else f", server asks {error.retry_after_s:g} s",
                 error)
        if error.retryable and error.retry_after_s and too_long is None:
            log.info("%s: cool-down of %g s (the server's hint)", self.spec.name,
                     error.retry_after_s)
        row = attempt_row(task, self.engine.run_id, number, started_at, latency, error.outcome,
                          error.http_status, error.retry_after_s, str(error), replica=replica)
        await self.engine.writer.write({"attempts": [row]})
        if too_long is not None:
            raise too_long from exc
        if error is not exc:
            raise error from exc

    def _wait_too_long(self, error: ProviderError) -> WaitTooLong | None:
        """A stop for a hint beyond the model's ceiling, or None."""
        ceiling = self.spec.max_hint_s
        hint = error.retry_after_s
        if not error.retryable or hint is None or hint <= ceiling:
            return None
        return WaitTooLong(f"model {self.spec.name!r}: the server asks to wait {hint:,.0f} s, more "
                           f"than max_hint_s = {ceiling:g} s; this model is stopped, and running "
                           "`contam run` again later resumes it without asking answered items "
                           "again", http_status=error.http_status, retry_after_s=hint)


def attempt_row(task: Task, run_id: str, number: int, started_at: Any, latency: float,
                outcome: str, http_status: int | None, retry_after_s: float | None = None,
                error: str | None = None, *, replica: str | None = None) -> dict[str, Any]:
    """One ``attempts`` row (a lane's request, or a batch job's line). The task's tags (a probe's
    variant and samples) are columns beside the engine's own, never over them."""
    row = {"run_id": run_id, "item_id": task.item_id, "model": task.model, "attempt": number,
           "started_at": started_at, "latency_s": latency, "outcome": outcome,
           "http_status": http_status, "retry_after_s": retry_after_s,
           "error": redact(error) if error else None, "replica": replica}
    return {**task.tags, **row} if task.tags else row
