"""The async engine: one lane per configured model, generic over what is asked and what is kept.

Design notes: ARCHITECTURE.md, The engine's lanes.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence

import anyio
import httpx

from contam.harness.engine.attempts import LaneAttempts
from contam.harness.engine.collector import collector_tuned
from contam.harness.engine.counters import LaneStats
from contam.harness.engine.failures import RETRY_WAIT_INITIAL, RETRY_WAIT_MAX, stop_reason
from contam.harness.engine.limits import LaneLimits
from contam.harness.engine.pool import lane_client
from contam.harness.engine.replicas import Replica, ReplicaSet, none_left, preflight_all
from contam.harness.engine.tasks import Accept, Lane, ProviderFactory, Task
from contam.harness.engine.writer import BatchWriter
from contam.providers.base import ProviderError, redact
from contam.providers.registry import create_provider

log = logging.getLogger(__name__)

__all__ = ["Task", "Lane", "Accept", "Engine", "ProviderFactory", "stop_reason"]


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
                    self.writer.stop_waiting()  # a full disk: journal the answers it holds
                else:
                    self.abandon()
                    self.writer.stop_waiting()  # or, where the journal had no room, give them up


class _LaneRun(LaneAttempts):
    """One lane at work: its limits, its counters and its workers (whose per-request path is
    :class:`~contam.harness.engine.attempts.LaneAttempts`)."""

    engine: Engine

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
        """The replica's provider's preflight (an HTTP provider's begins with a quick connection
        check of its server); its report, if any, in one line."""
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
