"""The figures the live table and the plain lines both show, as text: rates, requests per
minute, the elapsed clock, the ETA, a replica's line, and every label made safe to print."""

from __future__ import annotations

from collections.abc import Sequence

from contam.harness.display.rates import RateMeter
from contam.harness.engine.counters import LaneStats, ReplicaStats
from contam.harness.text import visible

__all__ = ["safe", "rate_text", "rpm_text", "eta_text", "elapsed_text", "is_active",
           "nothing_to_do", "replica_line"]


def safe(text: str) -> str:
    """One line of a label or message, its control and bidi characters as escapes."""
    return visible(text, keep_newlines=False)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def rate_text(per_second: float) -> str:
    """Answers per second, or per minute below one a second: a slow model never shows 0.0/s."""
    if per_second >= 1:
        return f"{per_second:.1f}/s"
    per_minute = per_second * 60
    return f"{per_minute:.1f}/m" if per_minute < 10 else f"{per_minute:.0f}/m"


def eta_text(lanes: Sequence[LaneStats], meter: RateMeter, now: float) -> str:
    """``ETA 3m20s``: lanes run side by side, so the run ends when the slowest active lane does.
    After Ctrl-C nothing new is asked, so what is left is the requests in flight, counted down."""
    draining = [s for s in lanes if s.interrupted and s.finished is None]
    if draining:
        return f"stopping: {sum(s.in_flight for s in draining)} in flight"
    waits = []
    for stats in lanes:
        if not is_active(stats) or not stats.remaining:
            continue
        rate = meter.eta_rate(stats, now)
        if rate <= 0:
            return "ETA ?"
        waits.append(stats.remaining / rate)
    return f"ETA {_duration(max(waits)) if waits else '-'}"


def is_active(stats: LaneStats) -> bool:
    """A lane still at work: neither stopped nor finished."""
    return not stats.stopped and stats.finished is None


def elapsed_text(lanes: Sequence[LaneStats], now: float) -> str:
    """Time since the first lane started; stops when every lane has finished."""
    ends = [s.finished for s in lanes]
    end = max(ends) if ends and None not in ends else now  # type: ignore[type-var]
    return _duration(end - min(s.started for s in lanes))


def _limit(value: float | None) -> str:
    return f"{value:g}" if value else "-"


def rpm_text(rpm: float | None, limit: float | None) -> str:
    """Requests per minute against the limit; ``-`` for a lane too young to have a rate."""
    return f"{'-' if rpm is None else f'{rpm:.0f}'}/{_limit(limit)}"


def nothing_to_do(lanes: Sequence[LaneStats]) -> str:
    """Why a run has no work: every item is answered already, or there is no model."""
    labels = ", ".join(safe(s.label) for s in lanes)
    return f"every item already answered by {labels}" if lanes else "no models"


def replica_line(replica: ReplicaStats) -> str:
    """One replica of a model, compactly: where, in flight, replies, errors, cool-down; or why
    its preflight left it out."""
    cooling = replica.cooling_for()
    where = safe(replica.url.removeprefix("http://").removeprefix("https://"))
    if replica.left_out:
        return f"{where}  left out ({replica.left_out})"
    return (f"{where}  in flight {replica.in_flight}  ok {replica.ok}  errors {replica.errors}"
            + (f"  cooling {cooling:.1f}s" if cooling > 0 else ""))
