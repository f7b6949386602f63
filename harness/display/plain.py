"""The plain display, for ``--no-progress``, pipes and CI: the table's figures as one log line
per model (and per replica), printed every few seconds from a background thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TextIO

from contam.harness.display.figures import (
    elapsed_text, eta_text, is_active, nothing_to_do, rate_text, replica_line, rpm_text, safe,
)
from contam.harness.display.rates import RateMeter
from contam.harness.engine.counters import LaneStats

__all__ = ["plain_lines", "PlainProgress"]


def plain_lines(lanes: Sequence[LaneStats], meter: RateMeter, now: float | None = None) -> list[str]:
    """The same figures as the table, one log line per lane plus a totals line."""
    now = time.monotonic() if now is None else now
    if not sum(s.total for s in lanes):
        return [f"nothing to do ({nothing_to_do(lanes)})"]
    lines, rates = [], []
    for s in lanes:
        rate_now, rpm_now = meter.sample(s, now)
        rates.append(rate_now if is_active(s) else None)
        cooling = s.cooling_for()
        lines.append(
            f"{safe(s.label)}: {s.done}/{s.total} answered, {rate_text(rate_now)} now, "
            f"{rate_text(s.average_rate(now))} avg, in flight {s.in_flight}/{s.cap}, "
            f"rpm {rpm_text(rpm_now, s.rpm_limit)}, retries {s.retries}, 429s {s.rate_limited}, "
            + (f"cooling down {cooling:.1f}s, " if cooling > 0 else "")
            + f"failed {s.failed}, {s.state}")
        lines += [f"{safe(s.label)} replica {replica_line(replica)}"
                  for replica in s.replicas]
    done, total = sum(s.done for s in lanes), sum(s.total for s in lanes)
    active = [rate for rate in rates if rate is not None]
    lines.append(f"total: {done}/{total} answered, {rate_text(sum(active)) if active else '-'}, "
                 f"elapsed {elapsed_text(lanes, now)}, {eta_text(lanes, meter, now)}")
    return lines


class PlainProgress:
    """Log lines every ``interval_s`` seconds from a background thread, and once at the end."""

    def __init__(self, lanes: Sequence[LaneStats], file: TextIO, interval_s: float = 5.0) -> None:
        self.lanes, self.file, self.interval_s, self.meter = lanes, file, interval_s, RateMeter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="contam-progress", daemon=True)
        self._lock = threading.Lock()
        self.started = time.monotonic()

    def note(self, message: str) -> None:
        with self._lock:
            print(safe(message), file=self.file, flush=True)

    def print_lines(self) -> None:
        elapsed = time.monotonic() - self.started
        with self._lock:
            for line in plain_lines(self.lanes, self.meter):
                print(f"[{elapsed:7.1f}s] {line}", file=self.file, flush=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.print_lines()

    def __enter__(self) -> "PlainProgress":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.print_lines()
