"""The counters of one lane: plain integers the workers bump and a display samples."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["LaneStats", "ReplicaStats"]


@dataclass(eq=False, kw_only=True)
class ReplicaStats:
    """Counters of one replica of a lane's model (a ``base_url`` of several)."""

    url: str
    in_flight: int = 0
    ok: int = 0  # replies received (whatever the lane made of them)
    errors: int = 0  # failed exchanges: error statuses, timeouts, resets
    # seconds left in the replica's cool-down; a function, so no part of a repr
    cooling_for: Callable[[], float] = field(default=lambda: 0.0, repr=False)
    left_out: str | None = None  # why its preflight left it out (unreachable, fatal ...)


@dataclass(eq=False, kw_only=True)
class LaneStats:
    """Counters of one lane. Written by the lane's workers, read by a display thread."""

    label: str
    total: int
    cap: int
    rpm_limit: float | None = None
    done: int = 0  # tasks accepted (answers written)
    failed: int = 0  # tasks that used up their attempts
    failures: Counter[str] = field(default_factory=Counter)  # last error of each failed task
    in_flight: int = 0
    sent: int = 0  # attempts sent, retries included
    retries: int = 0
    rate_limited: int = 0  # 429s
    stopped: str | None = None  # why it stopped: quota, substitution, auth, missing key, fatal ...
    stop_message: str | None = None
    interrupted: bool = False  # drained after SIGINT/SIGTERM
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    # seconds left in the lane's cool-down; a function, so no part of a repr
    cooling_for: Callable[[], float] = field(default=lambda: 0.0, repr=False)
    replicas: list[ReplicaStats] = field(default_factory=list)  # empty: one replica

    @property
    def remaining(self) -> int:
        return max(0, self.total - self.done - self.failed)

    @property
    def state(self) -> str:
        if self.stopped:
            return f"STOPPED: {self.stopped}"
        if self.interrupted:
            return "interrupted"
        if self.finished is not None:
            return "done"
        return "cooling down" if self.cooling_for() > 0 else "running"

    def average_rate(self, now: float) -> float:
        elapsed = (self.finished or now) - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    def progress(self, rate_per_s: float) -> dict[str, object]:
        """The counters as ``contam.harness.store.access.live_progress`` gives them, with the answers
        per second a display measured (``rate_per_s``)."""
        stopped = self.stopped or ("interrupted" if self.interrupted else None)
        return {"model": self.label, "done": self.done, "total": self.total,
                "failed": self.failed, "retries": self.retries,
                "rate_limited": self.rate_limited, "in_flight": self.in_flight,
                "concurrency": self.cap, "rate_per_s": round(rate_per_s, 3),
                "cooling_down_s": round(max(0.0, self.cooling_for()), 1), "stopped": stopped}

    def top_failures(self, count: int = 3) -> list[tuple[str, int]]:
        """The commonest causes of the failed tasks, most frequent first."""
        return self.failures.most_common(count)
