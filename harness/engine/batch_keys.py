"""How the batch lane (:mod:`contam.harness.engine.batch_lane`) names and recognises its jobs and lines:
the tag a job carries at the provider, the custom id of each line, what a task asks (to tell
whether an open job already asks it), and whether a job the store has no id for was created
around the time one was submitted."""

from __future__ import annotations

import datetime as dt
from typing import Any

from contam.harness.engine.tasks import Task
from contam.providers.batch import JobState

__all__ = ["job_tag", "custom_id", "task_key", "created_near", "CREATION_WINDOW"]

# How far a provider's clock and ours may disagree about when a job was created.
CREATION_WINDOW = dt.timedelta(minutes=10)


def job_tag(run_id: str, batch_key: str) -> str:
    return f"contam:{run_id}:{batch_key}"


def custom_id(key: str, line: int) -> str:
    return f"{key}-{line:06d}"


def task_key(task: Task) -> tuple[Any, ...]:
    """What a task asks: its item, and for a probe's request its prompt and sample numbers."""
    tags = task.tags or {}
    return task.item_id, tags.get("variant"), tuple(tags.get("samples") or ())


def created_near(state: JobState, created_at: dt.datetime) -> bool:
    """Whether the provider says it created the job within the window around ``created_at``
    (naive UTC); a job whose creation time cannot be read is kept as a candidate."""
    text = (state.raw or {}).get("created_at")
    try:
        when = dt.datetime.fromisoformat(str(text)).astimezone(dt.UTC).replace(tzinfo=None)
    except ValueError:
        return True
    return abs(when - created_at) <= CREATION_WINDOW
