"""``contam batches``: the store's batch jobs; ``contam batches cancel ID`` cancels one.

The provider, base URL and key variable of a job come from the ``runs`` row of the run that
submitted it (no config needed). ``--provider-jobs`` also lists the providers' jobs tagged by
contam that the store does not know (one created in the instant before a kill; the next
``contam run --batch`` adopts it by its tag). Each call returns a result object; ``contam.harness.cli``
prints it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson

from contam.harness.config import ModelSpec
from contam.harness.declare import flag_of
from contam.harness.errors import UserError
from contam.harness.jobs.options.lane import RunOptions
from contam.harness.store import DEFAULT_STORE, Store, utc_now
from contam.harness.store.batches import known_job_ids
from contam.providers.base import ProviderError
from contam.providers.batch import BatchProtocol, JobState, create_batch_protocol
from contam.providers.registry import create_provider

__all__ = ["list_batches", "cancel_batch", "BatchJobs", "CancelledJob", "job_lines"]

_LIST_SQL = """
SELECT job_id, model, provider, status, cells, succeeded, failed, created_at, finished_at, run_id,
       batch_key
FROM latest_batches ORDER BY created_at, seq
"""
_COLUMNS = ("job_id", "model", "provider", "status", "cells", "succeeded", "failed",
            "created_at", "finished_at", "run_id")


@dataclass(frozen=True)
class BatchJobs:
    """The store's batch jobs (the latest row of each) and, when asked for, a line per job of
    the providers that carries a contam tag but is not in the store."""

    rows: list[dict[str, Any]]
    untracked: list[str] | None = None

    def lines(self) -> list[str]:
        return job_lines(self.rows) + (self.untracked or [])


@dataclass(frozen=True)
class CancelledJob:
    job_id: str
    model: str
    status: str  # the provider's word after the cancel

    def line(self) -> str:
        return (f"batch {self.job_id} ({self.model}): {self.status}; the next `contam run "
                f"{flag_of(RunOptions, 'batch')}` "
                "imports what it answered and asks the rest again")


def list_batches(*, store: str | Path = DEFAULT_STORE, provider_jobs: bool = False) -> BatchJobs:
    """``contam batches``: the store's jobs; ``provider_jobs`` also asks the providers."""
    with Store(store) as opened:
        rows = opened.query_dicts(_LIST_SQL)
        return BatchJobs(rows, anyio.run(_untracked, opened) if provider_jobs else None)


def cancel_batch(job_id: str, *, store: str | Path = DEFAULT_STORE) -> CancelledJob:
    """``contam batches cancel ID``: ask the provider to cancel the job and record its status."""
    with Store(store) as opened:
        return anyio.run(_cancel, opened, job_id)


def job_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """A plain table: a header and one line per job."""
    if not rows:
        return ["no batch jobs in this store"]
    cells = [[_text(row.get(c)) for c in _COLUMNS] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(_COLUMNS)]
    return ["  ".join(v.ljust(w) for v, w in zip(line, widths)).rstrip()
            for line in [list(_COLUMNS), *cells]]


def _text(value: Any) -> str:
    if value is None:
        return "-"
    return value.strftime("%Y-%m-%d %H:%M:%S") if isinstance(value, dt.datetime) else str(value)


def _spec(store: Store, run_id: str, model: str) -> ModelSpec:
    rows = store.query("SELECT config FROM runs WHERE run_id = ? LIMIT 1", [run_id])
    models = orjson.loads(rows[0][0]).get("models", []) if rows else []
    for entry in models:
        if entry.get("name") == model:
            return ModelSpec(**entry)
    raise UserError(f"{store.path}: run {run_id} has no model {model!r} on record")


async def _cancel(store: Store, job_id: str) -> CancelledJob:
    rows = store.query_dicts("SELECT * FROM latest_batches WHERE job_id = ?", [job_id])
    if not rows:
        raise UserError(f"{store.path}: no batch job {job_id!r} (see `contam batches`)")
    row = rows[0]
    spec = _spec(store, row["run_id"], row["model"])
    state = await _with_protocol(spec, lambda protocol: protocol.cancel(job_id))
    store.append("batches", [{**{k: row[k] for k in ("batch_key", "run_id", "model", "provider",
                                                      "provider_model", "job_id", "cells",
                                                      "created_at")},
                              "status": state.status, "updated_at": utc_now()}])
    return CancelledJob(job_id, row["model"], state.status)


async def _with_protocol(spec: ModelSpec, action: Any) -> Any:
    async with httpx.AsyncClient(timeout=max(spec.timeout_s, 60.0)) as client:
        try:
            return await action(create_batch_protocol(create_provider(spec, client), client))
        except ProviderError as exc:
            raise UserError(str(exc)) from None


async def _untracked(store: Store) -> list[str]:
    """Provider jobs tagged ``contam:`` that the store has no id for."""
    known = known_job_ids(store)
    pairs = store.query("SELECT DISTINCT run_id, model FROM batches")
    specs = {(s.provider, s.base_url, s.api_key_env): s for s in (_spec(store, r, m) for r, m in pairs)}
    lines = []
    for spec in specs.values():
        jobs: list[JobState] = await _with_protocol(spec, _listed)
        lines += [f"not in the store: {spec.provider} job {job.job_id} {job.status} tagged {job.tag}"
                  for job in jobs if job.tag and job.tag.startswith("contam:") and job.job_id not in known]
    return lines or ["every contam-tagged job of the providers is in the store"]


async def _listed(protocol: BatchProtocol) -> list[JobState]:
    return await protocol.list_jobs()
