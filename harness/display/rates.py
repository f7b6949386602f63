"""Rates from snapshots: a display samples a lane's counters whenever it renders and derives
answers per second now, requests per minute, and the smoothed rate an ETA divides by, so that
what a display costs does not grow with concurrency."""

from __future__ import annotations

import math
from collections import deque

from contam.harness.engine.counters import LaneStats

__all__ = ["RateMeter", "RPM_MIN_SPAN_S"]

NOW_WINDOW_S = 10.0  # "answers/s now" averages over the last ten seconds
RPM_WINDOW_S = 60.0
# A lane younger than this shows no requests per minute: 18 requests in its first second are
# no rate of 1,080 a minute.
RPM_MIN_SPAN_S = 10.0
ETA_SMOOTHING_S = 30.0  # time constant of the rate an ETA divides by


class RateMeter:
    """Recent rates from snapshots of the counters, taken whenever a display renders.

    A finished lane's rates are frozen at its finish. The rate an ETA divides by is the last
    minute's, smoothed exponentially (time constant ``ETA_SMOOTHING_S``), so that a burst of
    replies or a cool-down moves the ETA gradually instead of making it jump."""

    def __init__(self) -> None:
        self._history: dict[int, deque[tuple[float, int, int]]] = {}
        self._frozen: dict[int, tuple[float, float | None]] = {}
        self._smoothed: dict[int, tuple[float, float]] = {}  # lane -> (when, answers per second)

    def sample(self, stats: LaneStats, now: float) -> tuple[float, float | None]:
        """(answers per second over the last 10 s, requests per minute over the last 60 s, or
        None while the lane has run less than ``RPM_MIN_SPAN_S``)."""
        if id(stats) in self._frozen:
            return self._frozen[id(stats)]
        history = self._history.setdefault(id(stats), deque([(stats.started, 0, 0)]))
        at = now if stats.finished is None else max(stats.finished, history[-1][0])
        history.append((at, stats.done, stats.sent))
        while len(history) > 2 and at - history[1][0] >= RPM_WINDOW_S:
            history.popleft()
        old_enough = at - stats.started >= RPM_MIN_SPAN_S
        rates = (self._rate(history, at, NOW_WINDOW_S, 1),
                 self._rate(history, at, RPM_WINDOW_S, 2) * 60 if old_enough else None)
        if stats.finished is not None:
            self._frozen[id(stats)] = rates
        self._smooth(stats, at, self._rate(history, at, RPM_WINDOW_S, 1))
        return rates

    def eta_rate(self, stats: LaneStats, now: float) -> float:
        """Answers per second to divide the work left by: smoothed, the average until sampled."""
        when_rate = self._smoothed.get(id(stats))
        return when_rate[1] if when_rate else stats.average_rate(now)

    def _smooth(self, stats: LaneStats, now: float, rate: float) -> None:
        previous = self._smoothed.get(id(stats))
        if previous is None or now - stats.started < ETA_SMOOTHING_S:
            # Young lane: its last-minute rate is its average since the start, smooth enough
            # already, and a slow first reply must not linger in the ETA.
            self._smoothed[id(stats)] = (now, rate)
            return
        weight = 1 - math.exp(-max(0.0, now - previous[0]) / ETA_SMOOTHING_S)
        self._smoothed[id(stats)] = (now, previous[1] + weight * (rate - previous[1]))

    @staticmethod
    def _rate(history: deque[tuple[float, int, int]], now: float, window: float, column: int) -> float:
        """Change per second since the oldest snapshot inside the window (or the one just before
        the latest, when the window holds only the latest)."""
        index = next((i for i, snap in enumerate(history) if now - snap[0] <= window), len(history) - 1)
        then = history[min(index, len(history) - 2)]
        elapsed = now - then[0]
        return (history[-1][column] - then[column]) / elapsed if elapsed > 0 else 0.0
