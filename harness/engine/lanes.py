"""The async engine: one lane per configured model, generic over what is asked and what is kept.

A caller (``contam run``, ``contam judge``, a benchmark) describes its work as lanes of
:class:`Task` objects and says what to keep from a reply with an ``accept`` hook::

    engine = Engine(lanes, run_id=run_id, accept=accept)
    with open_progress(engine.stats) as progress:
        async with BatchWriter(store) as writer:
            await engine.run(writer, notify=progress.note)

Per lane (see :mod:`harness.engine.limits`): an RPM bucket, an optional TPM bucket, exactly
``spec.concurrency`` workers pulling from the lane's lazy task iterator, and a cool-down gate that
a 429 with a hint closes for the whole lane. A model with several replicas (``base_url = [...]``)
keeps that one lane; each request goes to the replica with the fewest in flight, and a failing
replica cools down alone (:mod:`harness.engine.replicas`). Retries are stamina's, on retryable errors only
(:class:`RateLimited`, :class:`Transient`, :class:`Timeout`), at most ``spec.max_attempts``
attempts: the server's hint is the wait when there is one, exponential backoff with jitter
otherwise. :class:`QuotaExhausted` and :class:`Fatal` stop their lane (in-flight requests finish,
nothing new is sent); the other lanes go on.

Every attempt becomes an ``attempts`` row; a successful one also brings whatever ``accept``
returned, in the same transaction. Every reply's served model is checked before ``accept`` sees
it, so a substituted model stops its lane before anything is written for it.

``accept(task, reply, latency_s) -> {table: [row, ...]}`` may raise a :class:`ProviderError`; a
retryable one (the judge's malformed label) is recorded like a failed attempt and asked again.

On SIGINT/SIGTERM (``handle_signals=True``) no new request is sent, in-flight ones finish (bounded
by their timeout) and are committed; a second signal abandons them. ``engine.interrupted`` then
holds the signal number. The engine needs anyio's asyncio backend (aiolimiter is asyncio-only).

Speed: the per-request path holds one cancel scope, two flag checks and a non-yielding write;
why each costs what it does is said where it is (``contam bench --emulator`` measures it).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
import httpx
import stamina

from harness.config import ModelSpec
from harness.engine.counters import LaneStats
from harness.engine.limits import LaneLimits
from harness.engine.pool import lane_client, set_worker_slot
from harness.engine.replicas import Replica, ReplicaSet, none_left, preflight_all
from harness.engine.writer import BatchWriter, Rows
from harness.errors import cause_line
from harness.store import utc_now
from providers.base import (
    BadKey,
    Fatal,
    MissingKey,
    Provider,
    ProviderError,
    QuotaExhausted,
    RateLimited,
    Reply,
    Request,
    ServedModelMismatch,
    Timeout,
    Transient,
    redact,
)
from providers.reach import CONNECT_CHECK_S, check_reachable
from providers.registry import check_first_reply, create_provider

log = logging.getLogger(__name__)

__all__ = ["Task", "Lane", "Accept", "Engine", "ProviderFactory", "InternalError",
           "stop_reason", "failure_cause", "retry_wait", "collector_tuned", "RETRY_WAIT_INITIAL",
           "RETRY_WAIT_MAX", "RETRY_WAIT_JITTER"]

# Seconds the engine waits beyond ``spec.timeout_s`` before abandoning a request the provider's
# own timeout did not end (httpx times each phase, not the whole exchange).
DEADLINE_MARGIN_S = 5.0
# stamina's exponential backoff (seconds) for retryable errors that carry no hint. Tests make
# every wait zero with stamina.set_testing.
RETRY_WAIT_INITIAL, RETRY_WAIT_MAX, RETRY_WAIT_JITTER = 1.0, 60.0, 1.0
# Container allocations between two collections of the youngest generation (CPython's default is
# 700). Every request allocates a few hundred short-lived objects (httpx's request and response,
# h11's events, the rows), so at 700 most of them are still alive at a collection and get
# promoted, to be traversed again by the older generations.
GC_YOUNG_THRESHOLD = 10_000


@contextlib.contextmanager
def collector_tuned() -> Iterator[None]:
    """The garbage collector as a long run wants it, for the duration of the block: what exists
    at the start (imports, the store, the config: never garbage) is frozen out of the collections
    (``gc.freeze``, O(1); no ``gc.collect`` first, which would cost as much as a hundred requests),
    and the youngest generation is collected every ``GC_YOUNG_THRESHOLD`` allocations. Together
    they cut about a tenth of the CPU per request; ``contam bench`` gives its bare httpx loop the
    same."""
    gc.freeze()
    thresholds = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


@dataclass(frozen=True, slots=True)
class Task:
    """One question for one lane. ``context`` is opaque to the engine and handed to ``accept``;
    ``tags`` are columns its ``attempts`` rows carry beside item and model (a probe's ``variant``
    and ``samples``: several requests of one cell, told apart)."""

    item_id: str
    model: str  # the lane's label
    request: Request
    context: Any = None
    tags: Mapping[str, Any] | None = None


Accept = Callable[[Task, Reply, float], Rows]
ProviderFactory = Callable[[ModelSpec, httpx.AsyncClient], Provider]


@dataclass(kw_only=True, eq=False)
class Lane:
    """A configured model and its work. ``tasks`` is consumed lazily, exactly once;
    ``total`` is its length (for the display). ``provider`` is built from ``spec`` when None.
    A lane with ``refused`` set is reported stopped before any lane sends anything."""

    spec: ModelSpec
    tasks: Iterable[Task]
    total: int
    provider: Provider | None = None
    refused: ProviderError | None = None  # known before the run (a missing key): never starts


class InternalError(Fatal):
    """A provider or ``accept`` raised something unclassified: a bug, which stops its lane."""


class WaitTooLong(QuotaExhausted):
    """The server asked for a wait beyond the model's ``max_hint_s``: stopped like a quota, and the
    next run resumes, rather than a lane cooling down for hours (or, with a hostile hint, years)."""


def stop_reason(exc: BaseException) -> str:
    """The short reason a lane stopped, as the display and the summary show it."""
    if isinstance(exc, WaitTooLong):
        return "wait too long"
    if isinstance(exc, QuotaExhausted):
        return "quota"
    if isinstance(exc, ServedModelMismatch):
        return "substitution"
    if isinstance(exc, MissingKey):
        return "missing key"
    if isinstance(exc, BadKey):
        return "bad key"
    if isinstance(exc, Fatal) and exc.http_status in (401, 403):
        return "auth"
    if isinstance(exc, Transient):  # only a preflight stops a lane on a retryable error
        return "unreachable"
    if isinstance(exc, InternalError) or not isinstance(exc, ProviderError):
        return "internal error"
    return "fatal"


_CAUSE_CHARS = 120  # of an error message, in the summary's failure causes


def failure_cause(exc: ProviderError) -> str:
    """What a failed task's last error was, as the summary counts it: the underlying exception
    (``ConnectError: All connection attempts failed``) when there is one, else the error itself."""
    cause = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
    text = redact(str(cause)) or "(no message)"
    return f"{type(cause).__name__}: {text[:_CAUSE_CHARS]}"


def retry_wait(exc: Exception) -> bool | float:
    """stamina's backoff hook: retry only what is named retryable; a hint is the wait."""
    if not isinstance(exc, ProviderError) or not exc.retryable:
        return False
    return exc.retry_after_s if exc.retry_after_s is not None else True


class Engine:
    """Runs lanes concurrently; see the module docstring for the contract."""

    def __init__(self, lanes: Sequence[Lane], *, run_id: str, accept: Accept,
                 provider_factory: ProviderFactory | None = None) -> None:
        self.run_id = run_id
        self.accept = accept
        self.provider_factory = provider_factory or create_provider
        self.interrupted: int | None = None
        self._lanes = [_LaneRun(self, lane) for lane in lanes]
        self.stats: list[LaneStats] = [run.stats for run in self._lanes]

    async def run(self, writer: BatchWriter, *, notify: Callable[[str], None] = print,
                  handle_signals: bool = False) -> list[LaneStats]:
        """Run every lane to its end (or its stop); returns the lanes' final counters."""
        self.writer, self.notify = writer, notify
        with collector_tuned():
            await self._run_lanes(handle_signals)
        return self.stats

    async def _run_lanes(self, handle_signals: bool) -> None:
        for lane in self._lanes:
            lane.refuse_if_known()
        async with anyio.create_task_group() as outer:
            if handle_signals and threading.current_thread() is threading.main_thread():
                outer.start_soon(self._watch_signals)
            async with anyio.create_task_group() as lanes:
                for lane in self._lanes:
                    lanes.start_soon(lane.run)
            outer.cancel_scope.cancel()  # ends the signal watcher

    def drain(self) -> None:
        """Send nothing new; let in-flight requests finish and be written."""
        for lane in self._lanes:
            lane.drain()

    def abandon(self) -> None:
        """Give up on in-flight requests too (a second Ctrl-C)."""
        for lane in self._lanes:
            lane.abandon()

    async def _watch_signals(self) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for signum in signals:
                if self.interrupted is None:
                    self.interrupted = signum
                    log.warning("%s: draining the run", signal.Signals(signum).name)
                    self.notify(f"{signal.Signals(signum).name}: sending nothing new, waiting for "
                                "the requests in flight (again to abandon them)")
                    self.drain()
                else:
                    self.abandon()


class _LaneRun:
    """One lane at work: its limits, its counters and its workers."""

    def __init__(self, engine: Engine, lane: Lane) -> None:
        self.engine, self.lane, self.spec = engine, lane, lane.spec
        self.limits = LaneLimits(lane.spec)
        self.stats = LaneStats(label=lane.spec.name, total=lane.total, cap=lane.spec.concurrency,
                               rpm_limit=lane.spec.rpm, cooling_for=self.limits.cooling_for)
        self.replicas = ReplicaSet([], self.limits)  # built with the providers, in _prepare
        self._tasks: Iterator[Task] = iter(())
        self._workers: anyio.CancelScope | None = None
        self._in_flight: set[anyio.CancelScope] = set()
        self._draining = False
        self._halted = False  # stopped or draining: send nothing new, retry nothing
        self._abandoned = False

    # -- life cycle ---------------------------------------------------------------------------

    def refuse_if_known(self) -> None:
        if self.lane.refused is not None:
            self._stop(self.lane.refused)

    async def run(self) -> None:
        self.stats.started = time.monotonic()
        try:
            if self.lane.total > 0 and not self._halted:
                await self._run_with_client()
        finally:
            self.stats.finished = time.monotonic()

    async def _run_with_client(self) -> None:
        workers = min(self.spec.concurrency, self.lane.total)
        async with contextlib.AsyncExitStack() as stack:
            # Each replica its own client: a worker keeps a connection to every replica it uses.
            clients = [await stack.enter_async_context(lane_client(workers, self.spec.timeout_s))
                       for _ in self.spec.replica_urls()]
            if not await self._prepare(clients) or self._draining:
                return
            self._tasks = iter(self.lane.tasks)
            async with anyio.create_task_group() as group:
                self._workers = group.cancel_scope
                for slot in range(workers):
                    group.start_soon(self._worker, slot)

    async def _prepare(self, clients: Sequence[httpx.AsyncClient]) -> bool:
        """Build the providers, one per replica, and report their preflights (every HTTP
        provider: a URL, and a server that accepts a connection; Ollama: is the tag local or
        proxied; local: load the weights). Of several replicas, one whose preflight fails is left
        out with one line; the lane stops, in one line, when none is left. False: stopped."""
        try:
            candidates = self._build_replicas(clients)
            self._use_replicas(await self._ready_replicas(candidates), candidates)
        except ProviderError as exc:
            self._stop(exc)
            return False
        return True

    async def _ready_replicas(self, candidates: list[Replica]) -> list[Replica]:
        """The replicas whose preflight passed; raises when none did."""
        failures = await preflight_all(candidates, self._preflight)
        if len(failures) == len(candidates):
            raise none_left(self.spec.name, list(failures.values()))
        for replica, exc in failures.items():
            replica.stats.left_out = stop_reason(exc)
            log.warning("%s: replica %s left out: %s", self.spec.name, replica.url, exc)
            self.engine.notify(f"{self.spec.name}: replica {replica.url} left out: "
                               f"{redact(str(exc))}")
        return [replica for replica in candidates if replica not in failures]

    def _build_replicas(self, clients: Sequence[httpx.AsyncClient]) -> list[Replica]:
        if self.lane.provider is not None:
            return [Replica(self.spec.replica_urls()[0], self.lane.provider)]
        return [Replica(url, self.engine.provider_factory(self.spec.for_replica(url), client))
                for url, client in zip(self.spec.replica_urls(), clients)]

    async def _preflight(self, replica: Replica) -> None:
        """A quick connection check of the replica's server (a server that is down would take
        every request's timeout and retries to say so; nothing is sent), then the provider's own
        preflight."""
        url = replica.provider.server_url()
        if url is not None:
            await check_reachable(url, label=f"{self.spec.provider} model {self.spec.name!r}",
                                  timeout=min(self.spec.timeout_s, CONNECT_CHECK_S))
        report = await replica.provider.preflight()
        if report:
            log.info("%s: preflight: %s", self.spec.name, report)
            self.engine.notify(f"{self.spec.name}: {report}")

    def _use_replicas(self, replicas: list[Replica], candidates: list[Replica]) -> None:
        self.replicas = ReplicaSet(replicas, self.limits, (RETRY_WAIT_INITIAL, RETRY_WAIT_MAX),
                                   max_hint_s=self.spec.max_hint_s)
        self.stats.cooling_for = self.replicas.cooling_for
        if len(candidates) > 1:  # the display's line per replica, those left out included
            self.stats.replicas = [replica.stats for replica in candidates]

    def drain(self) -> None:
        self._draining = self._halted = True
        self.stats.interrupted = True
        if self._workers is not None:
            self._workers.cancel()  # in-flight requests are shielded and finish

    def abandon(self) -> None:
        self.drain()
        self._abandoned = True
        for scope in list(self._in_flight):
            scope.cancel()

    def _stop(self, exc: BaseException) -> None:
        if self.stats.stopped is None:
            self.stats.stopped = stop_reason(exc)
            self.stats.stop_message = redact(str(exc)) or type(exc).__name__
            log.warning("%s: STOPPED (%s): %s", self.spec.name, self.stats.stopped,
                        self.stats.stop_message)
            self.engine.notify(f"{self.spec.name}: STOPPED ({self.stats.stopped}): "
                               f"{self.stats.stop_message}")
        self._halted = True
        if self._workers is not None:
            self._workers.cancel()

    # -- the per-request path -----------------------------------------------------------------

    async def _worker(self, slot: int) -> None:
        set_worker_slot(slot)  # this worker's own connection (see harness.engine.pool)
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
        ok = self._attempt_row(task, number, started_at, latency, "ok", reply.http_status,
                               replica=replica.url)
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
        row = self._attempt_row(task, number, started_at, latency, error.outcome,
                                error.http_status, error.retry_after_s, str(error),
                                replica=replica)
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

    def _attempt_row(self, task: Task, number: int, started_at: Any, latency: float,
                     outcome: str, http_status: int | None, retry_after_s: float | None = None,
                     error: str | None = None, *, replica: str | None) -> dict[str, Any]:
        row = {"run_id": self.engine.run_id, "item_id": task.item_id, "model": task.model,
               "attempt": number, "started_at": started_at, "latency_s": latency,
               "outcome": outcome, "http_status": http_status, "retry_after_s": retry_after_s,
               "error": redact(error) if error else None, "replica": replica}
        return {**row, **task.tags} if task.tags else row

