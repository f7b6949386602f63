"""``contam run --batch``: one model's unanswered cells as provider batch jobs, never paid twice.

Design notes: ARCHITECTURE.md, Batch jobs.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import stamina

from contam.harness.config import ModelSpec
from contam.harness.engine.attempts import attempt_row
from contam.harness.engine.counters import LaneStats
from contam.harness.engine.failures import (
    RETRY_WAIT_INITIAL, RETRY_WAIT_JITTER, InternalError, failure_cause, retry_wait, stop_reason,
)
from contam.harness.engine.tasks import Accept, Task
from contam.harness.engine.writer import BatchWriter, Rows
from contam.harness.errors import cause_line
from contam.harness.store import Store, utc_now
from contam.harness.store.batches import CLOSED_STATUSES, job_cells, known_job_ids, open_jobs
from contam.providers.base import ProviderError, Transient, redact
from contam.providers.batch import (
    BATCH_PROTOCOLS,
    BatchLine,
    BatchProtocol,
    JobLimits,
    JobState,
    LineResult,
    create_batch_protocol,
    split_lines,
)
from contam.harness.engine.batch_keys import created_near, custom_id, job_tag, task_key
from contam.providers.registry import check_first_reply, create_provider

__all__ = ["BatchOptions", "BatchLane", "BATCH_PROVIDERS", "uses_batch", "open_job_count",
           "job_tag"]

BATCH_PROVIDERS = frozenset(BATCH_PROTOCOLS)  # derived from contam.harness.provider_names


@dataclass(frozen=True, kw_only=True)
class BatchOptions:
    """How batch jobs are followed. Tests shrink the intervals and the job limits."""

    poll_initial_s: float = 5.0
    poll_max_s: float = 60.0  # the longest wait between two polls of a job
    fallback: str = "followup"  # failed lines: "followup" jobs, or "sync" (the runner asks them)
    limits: JobLimits | None = None  # None: the provider's own


def uses_batch(spec: ModelSpec, batch_flag: bool) -> bool:
    """``--batch`` or ``batch = true``, for a provider that has a batch API."""
    return (batch_flag or spec.batch) and spec.provider in BATCH_PROVIDERS


def open_job_count(store: Store, spec: ModelSpec, purpose: str | None = None) -> int:
    """Jobs of this model (and purpose: None for a run's) not imported yet: a run polls them,
    whatever its mode, rather than asking their cells again."""
    return len(_open_jobs(store, spec, purpose))


def _open_jobs(store: Store, spec: ModelSpec, purpose: str | None) -> list[tuple]:
    return open_jobs(store, spec.name, purpose)


@dataclass(eq=False)
class _Job:
    """A job this lane follows: its key, its cells by custom id, its provider state."""

    key: str
    cells: dict[str, Task]  # custom id -> the cell's task (no request: it went out in the job)
    created_at: Any
    job_id: str | None = None
    status: str = "submitting"
    delay: float = 0.0
    next_poll: float = 0.0
    state: JobState | None = None
    attempt: int = 1  # the round that submitted it: the attempts rows' number


class _Stopped(Exception):
    """The model stopped (its reason is in the lane's stats)."""


class BatchLane:
    """One model in batch mode: resume its open jobs, submit the rest, poll, import."""

    def __init__(self, store: Store, spec: ModelSpec, tasks: Callable[[], Iterator[Task]], *,
                 run_id: str, accept: Accept, options: BatchOptions, stats: LaneStats,
                 opening: str | None = None, purpose: str | None = None) -> None:
        self.store, self.spec, self.tasks = store, spec, tasks
        self.run_id, self.accept, self.options, self.stats = run_id, accept, options, stats
        self.opening = opening  # a note shown when the lane starts
        self.purpose = purpose  # None for a run's jobs; a probe's own word for its jobs
        self.refused: ProviderError | None = None  # known before the run (a missing key)
        self.protocol: BatchProtocol | None = None
        self.writer: BatchWriter | None = None
        self.notify: Callable[[str], None] = lambda message: None  # run() gets the display's
        self._last_errors: dict[tuple, str] = {}  # task key -> cause, while its last outcome failed

    async def run(self, writer: BatchWriter, notify: Callable[[str], None]) -> None:
        self.writer, self.notify = writer, notify
        self.stats.started = time.monotonic()
        if self.opening:
            notify(self.opening)
        try:
            if self.refused is not None:
                raise self.refused
            async with httpx.AsyncClient(timeout=max(self.spec.timeout_s, 60.0)) as client:
                provider = create_provider(self.spec, client)
                self.protocol = create_batch_protocol(provider, client)
                await self._rounds()
        except _Stopped:
            pass
        except ProviderError as exc:
            self._stop(exc)
        except Exception as exc:  # a reply of an unexpected shape, or a bug: stop this model only
            self._stop(InternalError(f"model {self.spec.name!r}: {cause_line(exc)}"))
        finally:
            self.stats.finished = time.monotonic()
        if self.options.fallback != "sync" and not self.stats.stopped:
            self.stats.failed = max(0, self.stats.total - self.stats.done)
            self.stats.failures.update(self._last_errors.values())

    async def _rounds(self) -> None:
        jobs = await self._resume()
        rounds = 1 if self.options.fallback == "sync" else self.spec.max_attempts
        for attempt in range(1, rounds + 1):
            in_open_jobs = {task_key(task) for job in jobs for task in job.cells.values()}
            jobs += await self._submit_pending(in_open_jobs, attempt)
            if not jobs:
                return
            await self._follow(jobs)
            jobs = []

    # -- resuming -----------------------------------------------------------------------------

    async def _resume(self) -> list[_Job]:
        rows = _open_jobs(self.store, self.spec, self.purpose)
        jobs = []
        for key, job_id, status, created_at in rows:
            job = _Job(key, self._cells(key), created_at, job_id, status)
            if job_id is None and not await self._recover(job):
                continue
            self.notify(f"{self.spec.name}: resuming batch {job.job_id} ({len(job.cells)} cells, "
                        "submitted by an earlier run): polling it, not submitting again")
            jobs.append(job)
        self.stats.in_flight += sum(len(job.cells) for job in jobs)
        return jobs

    def _cells(self, key: str) -> dict[str, Task]:
        rows = job_cells(self.store, key)
        return {custom_id(key, line): self._cell(item_id, None if variant is None else
                                                 {"variant": variant, "samples": samples})
                for line, item_id, variant, samples in rows}

    def _cell(self, item_id: str, tags: Mapping[str, Any] | None) -> Task:
        """A cell of a job: its item and tags (no request: it went out in the job)."""
        return Task(item_id=item_id, model=self.spec.name, request=None, tags=tags)

    async def _recover(self, job: _Job) -> bool:
        """A job submitted without its id reaching the store: adopt it if the provider has it,
        else mark it abandoned (its cells are pending again)."""
        found = await self._find(job)
        if found is None:
            await self._record(job, status="abandoned", error="not found at the provider")
            return False
        job.job_id, job.status, job.state = found.job_id, found.status, found
        await self._record(job, durable=True)
        return True

    async def _find(self, job: _Job) -> JobState | None:
        """The provider's job for ``job`` (whose id never reached the store), or None."""
        assert self.protocol is not None
        while True:
            jobs = await self.protocol.list_jobs()
            tagged = [j for j in jobs if j.tag and j.tag.endswith(f":{job.key}")]
            if tagged:
                return tagged[0]
            if self.protocol.tags_jobs:  # a tagged job not listed: there is none
                return None
            found, waiting = await self._untagged_match(job, jobs)
            if found is not None or not waiting:
                return found
            await anyio.sleep(self.options.poll_max_s)  # an untagged job must end to be read

    async def _untagged_match(self, job: _Job, jobs: list[JobState]) -> tuple[JobState | None, bool]:
        """Anthropic jobs carry no tag: among the jobs the store does not know that were created
        within minutes of this one, the ended one whose results carry its key; and whether one
        of them has yet to end."""
        assert self.protocol is not None
        known = known_job_ids(self.store)
        near = [j for j in jobs if j.job_id not in known and created_near(j, job.created_at)]
        for candidate in (j for j in near if j.ended):
            results = await self.protocol.results(candidate)
            if any(r.custom_id.startswith(f"{job.key}-") for r in results):
                return candidate, False
        return None, any(not j.ended for j in near)

    # -- submitting ---------------------------------------------------------------------------

    async def _submit_pending(self, in_open_jobs: set[str], attempt: int) -> list[_Job]:
        assert self.protocol is not None
        tasks = [t for t in self.tasks() if task_key(t) not in in_open_jobs]
        lines = (self.protocol.line(str(n), task.request) for n, task in enumerate(tasks))
        limits = self.options.limits or self.protocol.limits
        jobs = []
        for group in split_lines(lines, limits, self.protocol.line_overhead):
            job = await self._submit([tasks[int(line.custom_id)] for line in group], group, attempt)
            jobs.append(job)
        return jobs

    async def _submit(self, tasks: list[Task], group: list[BatchLine], attempt: int) -> _Job:
        key = f"c{uuid.uuid4().hex[:12]}"
        lines = [BatchLine(custom_id(key, n), line.body) for n, line in enumerate(group)]
        job = _Job(key, {line.custom_id: self._cell(task.item_id, task.tags)
                         for line, task in zip(lines, tasks)}, utc_now(), attempt=attempt)
        await self._record(job, durable=True, cells=[
            {"batch_key": key, "line": n, "item_id": t.item_id, "model": self.spec.name,
             **(t.tags or {})} for n, t in enumerate(tasks)])
        state = await self._send(job, lines)
        job.job_id, job.status, job.state = state.job_id, state.status, state
        await self._record(job, durable=True)
        self.stats.sent += len(lines)
        self.stats.in_flight += len(lines)
        self.notify(f"{self.spec.name}: submitted batch {job.job_id} ({len(lines)} requests)")
        return job

    async def _send(self, job: _Job, lines: list[BatchLine]) -> JobState:
        """Submit; after a retryable failure look for the job first (the request may have
        reached the provider), and send again only when it is not there."""
        assert self.protocol is not None
        state: JobState | None = None
        # A failure that outlasts the attempts leaves the job `submitting`: the next run looks
        # it up by its tag.
        async for attempt in stamina.retry_context(
                on=retry_wait, attempts=self.spec.max_attempts, timeout=None,
                wait_initial=min(RETRY_WAIT_INITIAL, self.options.poll_max_s),
                wait_max=self.options.poll_max_s, wait_jitter=RETRY_WAIT_JITTER):
            with attempt:
                state = await self._find(job) if attempt.num > 1 else None
                state = state or await self.protocol.submit(lines, job_tag(self.run_id, job.key))
        assert state is not None
        return state

    # -- following ----------------------------------------------------------------------------

    async def _follow(self, jobs: list[_Job]) -> None:
        for job in jobs:
            job.delay, job.next_poll = self.options.poll_initial_s, time.monotonic()
        while jobs:
            job = min(jobs, key=lambda j: j.next_poll)
            await anyio.sleep(max(0.0, job.next_poll - time.monotonic()))
            if await self._poll(job):
                jobs.remove(job)

    async def _poll(self, job: _Job) -> bool:
        """One poll; True once the job has ended and its results are imported."""
        assert self.protocol is not None and job.job_id is not None
        try:
            state = await self.protocol.poll(job.job_id)
        except ProviderError as exc:
            if not exc.retryable:
                raise
            state = None
        job.next_poll = time.monotonic() + job.delay
        job.delay = min(job.delay * 2, self.options.poll_max_s)
        if state is None:
            return False
        if state.status != job.status:
            job.status, job.state = state.status, state
            await self._record(job)
        self.notify(self._line(job, state))
        if not state.ended:
            return False
        await self._import(job, state)
        return True

    def _line(self, job: _Job, state: JobState) -> str:
        age = (utc_now() - job.created_at).total_seconds()
        wait = "" if state.ended else f", next poll in {max(0.0, job.next_poll - time.monotonic()):.0f}s"
        return (f"{self.spec.name}: batch {job.job_id} {state.status}: {state.succeeded or 0}/"
                f"{state.total or len(job.cells)} done, {state.failed or 0} failed, "
                f"age {age:.0f}s{wait}")

    # -- importing ----------------------------------------------------------------------------

    async def _import(self, job: _Job, state: JobState) -> None:
        assert self.protocol is not None and self.writer is not None
        try:
            results = await self.protocol.results(state)
        except ProviderError as exc:
            if exc.retryable:
                raise
            results, stop = [], exc  # the whole job failed: every cell failed with it
        else:
            stop = None
        rows, outcome = self._rows(job, results)
        stop = stop or outcome.stop
        self.stats.in_flight -= len(job.cells)
        self.stats.done += outcome.answered
        await self.writer.write_durably({**rows, "batches": [self._row(
            job, status="imported", succeeded=outcome.answered,
            failed=len(job.cells) - outcome.answered, error=str(stop) if stop else None)]})
        if stop is not None:
            self._stop(stop)
            raise _Stopped

    def _rows(self, job: _Job, results: Sequence[LineResult]) -> tuple[Rows, "_Outcome"]:
        outcome = _Outcome()
        rows: dict[str, list[dict[str, Any]]] = {"answers": [], "attempts": []}
        latency = (utc_now() - job.created_at).total_seconds()
        for result in results:
            task = job.cells.get(result.custom_id)
            if task is None or result.custom_id in outcome.seen:
                continue  # not a line of this job (an adopted Anthropic job), or a repeat
            outcome.seen.add(result.custom_id)
            self._result_rows(job, task, result, latency, rows, outcome)
        for custom_id in sorted(set(job.cells) - outcome.seen):
            error = Transient(f"{self.spec.name}: batch {job.job_id} returned no result for this request")
            rows["attempts"].append(self._attempt(job, job.cells[custom_id], latency, error))
            self._last_errors[task_key(job.cells[custom_id])] = failure_cause(error)
        return rows, outcome

    def _result_rows(self, job: _Job, task: Task, result: LineResult, latency: float,
                     rows: dict[str, list[dict[str, Any]]], outcome: "_Outcome") -> None:
        error = result.error
        if result.reply is not None:
            try:
                assert self.protocol is not None
                check_first_reply(self.protocol.provider, result.reply)
            except ProviderError as mismatch:
                error = mismatch
            else:
                # The request went out in the job; the accept hook reads only the cell.
                for table, table_rows in self.accept(task, result.reply, latency).items():
                    rows.setdefault(table, []).extend(table_rows)
                rows["attempts"].append(self._attempt(job, task, latency, None,
                                                      result.reply.http_status))
                self._last_errors.pop(task_key(task), None)
                outcome.answered += 1
                return
        assert error is not None
        rows["attempts"].append(self._attempt(job, task, latency, error))
        self._last_errors[task_key(task)] = failure_cause(error)
        if not error.retryable and outcome.stop is None:
            outcome.stop = error

    def _attempt(self, job: _Job, task: Task, latency: float, error: ProviderError | None,
                 http_status: int | None = None) -> dict[str, Any]:
        return attempt_row(task, self.run_id, job.attempt, job.created_at, latency,
                           error.outcome if error else "ok",
                           error.http_status if error else http_status,
                           error=str(error) if error else None)

    # -- store rows and stopping ----------------------------------------------------------------

    def _row(self, job: _Job, **fields: Any) -> dict[str, Any]:
        state = job.state
        row = {"batch_key": job.key, "run_id": self.run_id, "model": self.spec.name,
               "provider": self.spec.provider, "provider_model": self.spec.model,
               "job_id": job.job_id, "status": job.status, "cells": len(job.cells),
               "succeeded": state.succeeded if state else None,
               "failed": state.failed if state else None, "created_at": job.created_at,
               "updated_at": utc_now(), "purpose": self.purpose}
        if fields.get("status") in CLOSED_STATUSES:
            row["finished_at"] = utc_now()
        return {**row, **fields}

    async def _record(self, job: _Job, *, durable: bool = False,
                      cells: list[dict[str, Any]] | None = None, **fields: Any) -> None:
        assert self.writer is not None
        rows: dict[str, list[dict[str, Any]]] = {"batches": [self._row(job, **fields)]}
        if cells:
            rows["batch_cells"] = cells
        if durable:
            await self.writer.write_durably(rows)
        else:
            await self.writer.write(rows)

    def _stop(self, exc: BaseException) -> None:
        if self.stats.stopped is None:
            self.stats.stopped = stop_reason(exc)
            self.stats.stop_message = redact(str(exc)) or type(exc).__name__
            self.notify(f"{self.spec.name}: STOPPED ({self.stats.stopped}): {self.stats.stop_message}")


@dataclass
class _Outcome:
    answered: int = 0
    stop: ProviderError | None = None
    seen: set[str] = field(default_factory=set)
