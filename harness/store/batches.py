"""What the store knows of provider batch jobs (``batches``: the latest row per ``batch_key``
wins; ``batch_cells``: the cells each job carries), read by the batch lane and ``contam batches``
(ARCHITECTURE.md, The store).

Every read runs on a cursor of its own: the batch lane reads while the writer commits through
``store.con``, and an execute there would discard a result still open on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contam.harness.store.store import Store

__all__ = ["CLOSED_STATUSES", "open_jobs", "job_cells", "known_job_ids"]

CLOSED_STATUSES = ("imported", "abandoned")  # a job in either is done with
_OPEN_JOBS_SQL = f"""
SELECT batch_key, job_id, status, created_at FROM latest_batches
WHERE model = $model AND coalesce(purpose, '') = $purpose AND status NOT IN {CLOSED_STATUSES}
ORDER BY seq
"""


def open_jobs(store: Store, model: str, purpose: str | None) -> list[tuple]:
    """(batch_key, job_id, status, created_at) of ``model``'s jobs of this ``purpose`` (None: a
    run's) not imported or abandoned yet, oldest first."""
    return _read(store, _OPEN_JOBS_SQL, {"model": model, "purpose": purpose or ""})


def job_cells(store: Store, batch_key: str) -> list[tuple]:
    """(line, item_id, variant, samples) of each cell of the job ``batch_key``, in line order."""
    return _read(store, "SELECT line, item_id, variant, samples FROM batch_cells "
                        "WHERE batch_key = $key ORDER BY line", {"key": batch_key})


def known_job_ids(store: Store) -> set[str]:
    """Every provider job id the store has recorded (a job adopted or listed is one of these)."""
    return {row[0] for row in _read(store, "SELECT DISTINCT job_id FROM batches "
                                           "WHERE job_id IS NOT NULL", {})}


def _read(store: Store, sql: str, params: dict[str, Any]) -> list[tuple]:
    return store.con.cursor().execute(sql, params).fetchall()
