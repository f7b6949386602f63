"""The replicas of one lane: several servers of one model (``base_url = [...]``) behind one lane.

The lane keeps its one rate limit and its one concurrency cap (:mod:`contam.harness.engine.limits`, the
lane's workers); this module only decides where each admitted request goes: to the open replica
with the fewest requests in flight. A replica that fails cools down alone while the others go on:
for the server's hint when it gives one (a 429's ``Retry-After``), otherwise for its own
exponential backoff, which grows with its consecutive failures and resets on its next reply.

When every replica is cooling down, only a server's hint makes a request wait (for the first
hint to run out): a backoff of the replica's own steers requests to the others while there are
others, and is no wait once none is left. The task's own retry backoff already paces what goes to
a failing server, as with one replica; waiting here as well stacked every task behind the
replicas' growing backoffs (two replicas answering 500: 8 of 60 cells had failed after 88 s).

A lane of one replica is the lane as it always was: a hint closes the lane's own gate (which holds
back requests still waiting for a token, see :mod:`contam.harness.engine.limits`), and the task's retry
backoff is the only other wait.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence

import anyio

from contam.harness.engine.counters import ReplicaStats
from contam.harness.engine.limits import LaneLimits
from contam.providers.base import Provider, ProviderError, redact

__all__ = ["Replica", "ReplicaSet", "preflight_all", "none_left"]


class Replica:
    """One server of a lane's model: its provider (its own ``base_url`` and connections), its
    counters and its cool-down."""

    def __init__(self, url: str | None, provider: Provider) -> None:
        self.url, self.provider = url, provider
        self.stats = ReplicaStats(url=url or "default", cooling_for=self.cooling_for)
        self.failures = 0  # consecutive failed exchanges
        self.open_at = 0.0  # time.monotonic() before which another replica is preferred
        self.hinted_until = 0.0  # time.monotonic() before which its server refuses requests

    def cooling_for(self) -> float:
        return max(0.0, self.open_at - time.monotonic())

    def cool_down(self, seconds: float, *, hinted: bool = False) -> None:
        """Avoid this replica for ``seconds`` from now (never shortens a longer cool-down);
        ``hinted``: its server named that time, and nothing goes there before it."""
        until = time.monotonic() + seconds
        self.open_at = max(self.open_at, until)
        if hinted:
            self.hinted_until = max(self.hinted_until, until)


class ReplicaSet:
    """Where a lane's requests go. ``backoff_s``: (first, longest) cool-down without a hint;
    a hint beyond ``max_hint_s`` cools nothing down (the lane stops instead)."""

    def __init__(self, replicas: Sequence[Replica], limits: LaneLimits,
                 backoff_s: tuple[float, float] = (1.0, 60.0),
                 max_hint_s: float = float("inf")) -> None:
        self.replicas, self.limits, self.backoff_s = list(replicas), limits, backoff_s
        self.max_hint_s = max_hint_s
        self.single = len(self.replicas) == 1

    async def choose(self) -> Replica:
        """The open replica with the fewest in flight; with none open, the one whose own backoff
        ends first; waits only while every replica's server has asked for a wait."""
        if self.single:
            return self.replicas[0]  # the lane's gate already held the request back
        while True:
            now = time.monotonic()
            open_ = [r for r in self.replicas if r.open_at <= now]
            if open_:
                return min(open_, key=lambda r: r.stats.in_flight)
            unhinted = [r for r in self.replicas if r.hinted_until <= now]
            if unhinted:
                return min(unhinted, key=lambda r: (r.open_at, r.stats.in_flight))
            await anyio.sleep(min(r.hinted_until for r in self.replicas) - now)

    def answered(self, replica: Replica) -> None:
        replica.stats.ok += 1
        replica.failures = 0

    def failed(self, replica: Replica, error: BaseException) -> None:
        """A failed exchange: cool the replica down (or, with one replica, the lane on a hint)."""
        replica.stats.errors += 1
        if not isinstance(error, ProviderError) or not error.retryable or \
                (error.retry_after_s or 0) > self.max_hint_s:
            return  # the lane stops: nothing to cool down
        if self.single:
            # The server named a time before which this model's requests are refused (a 429, or
            # a 503 with Retry-After): nothing of the lane goes out until then.
            if error.retry_after_s:
                self.limits.cool_down(error.retry_after_s)
            return
        replica.failures += 1
        if error.retry_after_s:
            replica.cool_down(error.retry_after_s, hinted=True)
        else:
            replica.cool_down(self._backoff(replica.failures))

    def _backoff(self, failures: int) -> float:
        first, longest = self.backoff_s
        return min(longest, first * 2 ** (failures - 1))

    def cooling_for(self) -> float:
        """Seconds until the lane can send again: the lane's gate, or the first replica whose
        server's hint runs out (a replica's own backoff holds nothing back, see choose)."""
        lane = self.limits.cooling_for()
        if self.single:
            return lane
        now = time.monotonic()
        return max(lane, min(max(0.0, r.hinted_until - now) for r in self.replicas))


async def preflight_all(replicas: Sequence[Replica], preflight: Callable[[Replica], Awaitable[None]]
                        ) -> dict[Replica, ProviderError]:
    """Every replica's preflight at once (a dead server costs its timeout once, not once per
    replica in turn); the ones that failed, with their errors, in the replicas' order."""
    failures: dict[Replica, ProviderError] = {}

    async def check(replica: Replica) -> None:
        try:
            await preflight(replica)
        except ProviderError as exc:
            failures[replica] = exc

    async with anyio.create_task_group() as group:
        for replica in replicas:
            group.start_soon(check, replica)
    return {replica: failures[replica] for replica in replicas if replica in failures}


def none_left(name: str, failures: list[ProviderError]) -> ProviderError:
    """The one error a lane stops on when no replica passed its preflight: the only failure, or
    of several the first's kind with every replica's reason."""
    if len(failures) == 1:
        return failures[0]
    first = failures[0]
    reasons = "; ".join(redact(str(exc)) for exc in failures)
    return type(first)(f"model {name!r}: no replica left: {reasons}", http_status=first.http_status)
