"""Live progress: one row per model (and a line per replica under it), from counters the lanes bump.

The lanes only increment plain integers on :class:`LaneStats` (no per-request rendering, no
per-request timestamps); a display samples them a few times a second and derives the rates from
its own snapshots, so what it costs does not grow with concurrency.

- :class:`LiveProgress`: a rich ``Live`` table refreshed at 4 Hz from the event loop.
- :class:`PlainProgress`: a line per model every few seconds, for ``--no-progress``, pipes and CI.
- :class:`BatchProgress`: the batch jobs' (``contam score``) bar or plain lines, per metric.

Only model labels and already-redacted messages are ever shown; keys never reach a display.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TextIO

from rich.console import Console, ConsoleOptions
from rich.live import Live
from rich.segment import Segment

from harness.engine.counters import LaneStats, ReplicaStats

__all__ = ["LaneStats", "RateMeter", "LiveProgress", "PlainProgress", "open_progress",
           "render_table", "plain_lines", "replica_line", "COLUMNS", "BatchProgress"]

NOW_WINDOW_S = 10.0  # "answers/s now" averages over the last ten seconds
REFRESH_PER_S = 4
RPM_WINDOW_S = 60.0


class RateMeter:
    """Recent rates from snapshots of the counters, taken whenever a display renders."""

    def __init__(self) -> None:
        self._history: dict[int, deque[tuple[float, int, int]]] = {}

    def sample(self, stats: LaneStats, now: float) -> tuple[float, float]:
        """(answers per second over the last 10 s, requests per minute over the last 60 s)."""
        history = self._history.setdefault(id(stats), deque([(stats.started, 0, 0)]))
        history.append((now, stats.done, stats.sent))
        while len(history) > 2 and now - history[1][0] >= RPM_WINDOW_S:
            history.popleft()
        return self._rate(history, now, NOW_WINDOW_S, 1), self._rate(history, now, RPM_WINDOW_S, 2) * 60

    @staticmethod
    def _rate(history: deque[tuple[float, int, int]], now: float, window: float, column: int) -> float:
        """Change per second since the oldest snapshot inside the window (or the one just before
        the latest, when the window holds only the latest)."""
        index = next((i for i, snap in enumerate(history) if now - snap[0] <= window), len(history) - 1)
        then = history[min(index, len(history) - 2)]
        elapsed = now - then[0]
        return (history[-1][column] - then[column]) / elapsed if elapsed > 0 else 0.0


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _eta(lanes: Sequence[LaneStats], rates: Sequence[float], now: float) -> str:
    """Lanes run side by side: the run ends when the slowest active lane does."""
    waits = []
    for stats, rate in zip(lanes, rates):
        if stats.stopped or stats.finished is not None or not stats.remaining:
            continue
        rate = rate or stats.average_rate(now)
        if rate <= 0:
            return "?"
        waits.append(stats.remaining / rate)
    return _duration(max(waits)) if waits else "-"


def _limit(value: float | None) -> str:
    return f"{value:g}" if value else "-"


COLUMNS = ("model", "progress", "done", "ans/s now", "ans/s avg", "in flight", "RPM", "retries",
           "429s", "cool-down", "failed", "status")
_LEFT = {"model", "progress", "status"}
BAR_WIDTH = 24


class StyledLines:
    """Text already laid out, as (text, style) pieces handed to rich as they are: nothing for rich
    to wrap, measure or divide. Lines wider than the terminal are cropped."""

    def __init__(self) -> None:
        self.pieces: list[tuple[str, str]] = []

    def append(self, text: str, style: str = "") -> None:
        if self.pieces and self.pieces[-1][1] == style:  # one segment per run of a style
            self.pieces[-1] = (self.pieces[-1][0] + text, style)
        else:
            self.pieces.append((text, style))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        for text, style in self.pieces:
            yield Segment(text, console.get_style(style) if style else None)


def render_table(lanes: Sequence[LaneStats], meter: RateMeter,
                 now: float | None = None) -> StyledLines:
    """The live table: a header, one row per lane and a totals row, in fixed-width columns.

    Laid out by hand rather than as a rich ``Table``: the table re-measured and re-wrapped each
    of its 70-odd cells on every refresh (~5 ms of CPU, 4 times a second, on every run). Styled
    segments (:class:`StyledLines`) rather than a rich ``Text``, which rich would still wrap and
    divide: a refresh of four lanes went from ~0.6 to ~0.25 ms (measured outside a run)."""
    now = time.monotonic() if now is None else now
    samples = [meter.sample(stats, now) for stats in lanes]
    rows = [_row(stats, now, rate_now, rpm_now) for stats, (rate_now, rpm_now) in zip(lanes, samples)]
    totals = _totals(lanes, now, [rate for rate, _ in samples])
    widths = [max(len(name), *(len(row[i][0]) for row in (*rows, totals)))
              for i, name in enumerate(COLUMNS)]
    widths[COLUMNS.index("progress")] = max(len("progress"), BAR_WIDTH)
    text = StyledLines()
    text.append("contam\n", style="bold")
    _append_line(text, [(name, "bold") for name in COLUMNS], widths)
    for stats, row in zip(lanes, rows):
        _append_line(text, row, widths)
        for replica in stats.replicas:
            text.append(f"  └ {replica_line(replica)}\n", style="dim")
    _append_line(text, [("─" * width, "dim") for width in widths], widths)
    _append_line(text, totals, widths, end="")
    return text


Cell = tuple[str, str]  # (text, style); a bar is drawn from its "done/total" text


def _append_line(text: StyledLines, cells: Sequence[Cell], widths: Sequence[int],
                 end: str = "\n") -> None:
    for column, (value, style), width in zip(COLUMNS, cells, widths):
        if style == "bar":
            _append_bar(text, value, width)
        elif column in _LEFT:
            text.append(value.ljust(width), style=style)
        else:
            text.append(value.rjust(width), style=style)
        text.append("  ")
    text.append(end)


def _append_bar(text: StyledLines, value: str, width: int) -> None:
    done, total = (int(part) for part in value.split("/"))
    filled = round(BAR_WIDTH * done / total) if total else BAR_WIDTH
    text.append("━" * filled, style="bar.finished" if done >= total else "bar.complete")
    text.append("━" * (BAR_WIDTH - filled), style="bar.back")
    text.append(" " * (width - BAR_WIDTH))


def replica_line(replica: ReplicaStats) -> str:
    """One replica of a model, compactly: where, in flight, replies, errors, cool-down."""
    cooling = replica.cooling_for()
    where = replica.url.removeprefix("http://").removeprefix("https://")
    return (f"{where}  in flight {replica.in_flight}  ok {replica.ok}  errors {replica.errors}"
            + (f"  cooling {cooling:.1f}s" if cooling > 0 else ""))


def _row(stats: LaneStats, now: float, rate_now: float, rpm_now: float) -> list[Cell]:
    cooling = stats.cooling_for()
    status = "bold red" if stats.stopped else ("green" if stats.state == "done" else "")
    values = [stats.label, f"{stats.done}/{stats.total}", f"{stats.done}/{stats.total}",
              f"{rate_now:.1f}", f"{stats.average_rate(now):.1f}", f"{stats.in_flight}/{stats.cap}",
              f"{rpm_now:.0f}/{_limit(stats.rpm_limit)}", str(stats.retries),
              str(stats.rate_limited), f"{cooling:.1f}s" if cooling > 0 else "-", str(stats.failed),
              stats.state]
    cells = [(value, "") for value in values]
    cells[1] = (values[1], "bar")
    cells[-1] = (values[-1], status)
    return cells


def _totals(lanes: Sequence[LaneStats], now: float, rates: list[float]) -> list[Cell]:
    done, total = sum(s.done for s in lanes), sum(s.total for s in lanes)
    average = sum(s.average_rate(now) for s in lanes)
    values = ["total", "", f"{done}/{total}", f"{sum(rates):.1f}", f"{average:.1f}",
              f"{sum(s.in_flight for s in lanes)}/{sum(s.cap for s in lanes)}", "",
              str(sum(s.retries for s in lanes)), str(sum(s.rate_limited for s in lanes)), "",
              str(sum(s.failed for s in lanes)), f"ETA {_eta(lanes, rates, now)}"]
    return [(value, "bold") for value in values]


def plain_lines(lanes: Sequence[LaneStats], meter: RateMeter, now: float | None = None) -> list[str]:
    """The same figures as the table, one log line per lane plus a totals line."""
    now = time.monotonic() if now is None else now
    lines, rates = [], []
    for s in lanes:
        rate_now, rpm_now = meter.sample(s, now)
        rates.append(rate_now)
        cooling = s.cooling_for()
        lines.append(
            f"{s.label}: {s.done}/{s.total} answered, {rate_now:.1f}/s now, "
            f"{s.average_rate(now):.1f}/s avg, in flight {s.in_flight}/{s.cap}, "
            f"rpm {rpm_now:.0f}/{_limit(s.rpm_limit)}, retries {s.retries}, 429s {s.rate_limited}, "
            + (f"cooling down {cooling:.1f}s, " if cooling > 0 else "")
            + f"failed {s.failed}, {s.state}")
        lines += [f"{s.label} replica {replica_line(replica)}" for replica in s.replicas]
    done, total = sum(s.done for s in lanes), sum(s.total for s in lanes)
    lines.append(f"total: {done}/{total} answered, {sum(rates):.1f}/s, ETA {_eta(lanes, rates, now)}")
    return lines


class LiveProgress:
    """The rich Live table, refreshed ``REFRESH_PER_S`` times a second.

    Inside a running event loop (every command), the refresh is a callback on that loop, not
    rich's own refresh thread: a render takes ~5 ms of CPU whatever the load, and from a second
    thread the hand-overs of the GIL with the event loop doubled that and taxed every request
    too (the same lesson as the writer's, see :mod:`harness.engine.writer`). Without a running loop it
    falls back to rich's thread.
    """

    def __init__(self, lanes: Sequence[LaneStats], console: Console) -> None:
        self.lanes, self.console, self.meter = lanes, console, RateMeter()
        self._loop = _running_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._live = Live(console=console, refresh_per_second=REFRESH_PER_S,
                          auto_refresh=self._loop is None,
                          get_renderable=lambda: render_table(self.lanes, self.meter))

    def note(self, message: str) -> None:
        self._live.console.print(message, markup=False, highlight=False)

    def _tick(self) -> None:
        self._live.refresh()
        self._timer = self._loop.call_later(1 / REFRESH_PER_S, self._tick)

    def __enter__(self) -> "LiveProgress":
        self._live.__enter__()
        if self._loop is not None:
            self._timer = self._loop.call_later(1 / REFRESH_PER_S, self._tick)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._live.__exit__(None, None, None)  # the final refresh shows the end state


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


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
            print(message, file=self.file, flush=True)

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


def open_progress(lanes: Sequence[LaneStats], *, no_progress: bool = False,
                  console: Console | None = None, interval_s: float = 5.0
                  ) -> LiveProgress | PlainProgress:
    """The live table on a terminal; plain lines with ``--no-progress`` or when not a terminal."""
    console = console or Console()
    if no_progress or not console.is_terminal:
        return PlainProgress(lanes, console.file, interval_s)
    return LiveProgress(lanes, console)


# -- batch jobs ---------------------------------------------------------------------------------

_PLAIN_EVERY_S = 2.0  # seconds between plain progress lines of a batch job


class BatchProgress:
    """The display of a batch job (``contam score``): a rich progress bar per metric on a
    terminal; otherwise a plain line every few seconds. Both on stderr."""

    def __init__(self, live: bool) -> None:
        self.live = live

    def task(self, metric: str, total: int, unit: str = "rows") -> "_Task":
        """A task counted in ``unit`` (its rate is shown as ``unit``/s)."""
        return (_RichTask(metric, total, unit) if self.live and total else
                _PlainTask(metric, total, unit))

    @staticmethod
    def note(message: str) -> None:
        print(message, file=sys.stderr, flush=True)


class _Task:
    def __enter__(self) -> Callable[[int], None]:
        return self.advance

    def __exit__(self, *exc: object) -> None:
        pass

    def advance(self, n: int) -> None:
        raise NotImplementedError


class _PlainTask(_Task):
    def __init__(self, metric: str, total: int, unit: str) -> None:
        self.metric, self.total, self.unit, self.done = metric, total, unit, 0
        self.started = self.last = time.monotonic()

    def advance(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.last >= _PLAIN_EVERY_S and self.done < self.total:
            self.last = now
            rate = self.done / max(now - self.started, 1e-9)
            print(f"{self.metric}: {self.done}/{self.total} ({rate:,.0f} {self.unit}/s)",
                  file=sys.stderr, flush=True)


class _RichTask(_Task):
    def __init__(self, metric: str, total: int, unit: str) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)

        rate = TextColumn(f"{{task.fields[rate]}} {unit}/s", style="progress.data.speed")
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), rate, TimeElapsedColumn(),
                                 TimeRemainingColumn(), console=Console(stderr=True))
        self.task_id = self.progress.add_task(metric, total=total, rate="-")
        self.done, self.started = 0, time.monotonic()

    def __enter__(self) -> Callable[[int], None]:
        self.progress.start()
        return self.advance

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def advance(self, n: int) -> None:
        self.done += n
        rate = self.done / max(time.monotonic() - self.started, 1e-9)
        self.progress.update(self.task_id, advance=n, rate=f"{rate:,.0f}")
