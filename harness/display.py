"""Live progress: one row per model (and a line per replica under it), from counters the lanes bump.

The lanes only increment plain integers on :class:`LaneStats` (no per-request rendering, no
per-request timestamps); a display samples them a few times a second and derives the rates from
its own snapshots, so what it costs does not grow with concurrency.

- :class:`LiveProgress`: a rich ``Live`` table refreshed at 4 Hz from the event loop, laid out
  for the terminal's width (narrower: no bar, then each model's details on a second line).
- :class:`PlainProgress`: a line per model every few seconds, for ``--no-progress``, pipes and CI.
- :class:`BatchProgress`: the batch jobs' (``contam score``) bar or plain lines, per metric.

Only model labels and already-redacted messages are ever shown; keys never reach a display. Both
pass :func:`harness.text.visible` first: an ESC or a bidi override in a model name, a URL or a
server's message is shown as an escape, never obeyed by the terminal.
"""

from __future__ import annotations

import asyncio
import math
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TextIO

from rich.console import Console, ConsoleOptions
from rich.live import Live
from rich.segment import Segment

from harness.engine.counters import LaneStats, ReplicaStats
from harness.text import visible

__all__ = ["LaneStats", "RateMeter", "LiveProgress", "PlainProgress", "open_progress",
           "render_table", "plain_lines", "rate_text", "replica_line", "COLUMNS", "BatchProgress"]

NOW_WINDOW_S = 10.0  # "answers/s now" averages over the last ten seconds
REFRESH_PER_S = 4
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


def _safe(text: str) -> str:
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


def _eta(lanes: Sequence[LaneStats], meter: RateMeter, now: float) -> str:
    """``ETA 3m20s``: lanes run side by side, so the run ends when the slowest active lane does.
    After Ctrl-C nothing new is asked, so what is left is the requests in flight, counted down."""
    draining = [s for s in lanes if s.interrupted and s.finished is None]
    if draining:
        return f"stopping: {sum(s.in_flight for s in draining)} in flight"
    waits = []
    for stats in lanes:
        if not _active(stats) or not stats.remaining:
            continue
        rate = meter.eta_rate(stats, now)
        if rate <= 0:
            return "ETA ?"
        waits.append(stats.remaining / rate)
    return f"ETA {_duration(max(waits)) if waits else '-'}"


def _active(stats: LaneStats) -> bool:
    return not stats.stopped and stats.finished is None


def _elapsed(lanes: Sequence[LaneStats], now: float) -> str:
    """Time since the first lane started; stops when every lane has finished."""
    ends = [s.finished for s in lanes]
    end = max(ends) if ends and None not in ends else now  # type: ignore[type-var]
    return _duration(end - min(s.started for s in lanes))


def _limit(value: float | None) -> str:
    return f"{value:g}" if value else "-"


def _rpm(rpm: float | None, limit: float | None) -> str:
    """Requests per minute against the limit; ``-`` for a lane too young to have a rate."""
    return f"{'-' if rpm is None else f'{rpm:.0f}'}/{_limit(limit)}"


COLUMNS = ("model", "progress", "done", "now", "avg", "flight", "rpm", "retry", "429", "cool",
           "fail", "status")
_LEFT = {"model", "progress", "status"}
_DETAILS = ("avg", "flight", "rpm", "retry", "429", "cool", "fail")  # line 2 when too narrow
BAR_WIDTH = 24
_MIN_BAR = 10
_GAP = "  "


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


Cell = tuple[str, str]  # (text, style); a bar is drawn from its "done/total" text


@dataclass(frozen=True)
class Layout:
    """How the table fits the terminal: a bar of ``bar`` characters (0: none), and everything on
    one line per model or the details on a second, indented line."""

    widths: tuple[int, ...]
    width: int  # the terminal's
    bar: int
    two_lines: bool
    ascii_bar: bool  # no colour (NO_COLOR): the bar's done and to-do parts differ in shape


def render_table(lanes: Sequence[LaneStats], meter: RateMeter, now: float | None = None, *,
                 width: int | None = None, ascii_bar: bool = False) -> StyledLines:
    """The live table for a terminal ``width`` columns wide (None: unlimited): a title line with
    the elapsed clock, a header, one row per lane (two when narrow) and a totals row.

    Laid out by hand as pre-styled segments rather than a rich ``Table``, which re-measured and
    re-wrapped each of its 70-odd cells on every refresh (~5 ms of CPU, 4 times a second)."""
    now = time.monotonic() if now is None else now
    text = StyledLines()
    if not sum(s.total for s in lanes):
        text.append(f"contam: nothing to do ({_nothing_to_do(lanes)})", style="bold")
        return text
    samples = [meter.sample(stats, now) for stats in lanes]
    rows = [_row(stats, now, *sample) for stats, sample in zip(lanes, samples)]
    totals = _totals(lanes, now, meter, [rate for rate, _ in samples])
    layout = _layout([*rows, totals], width, ascii_bar)
    text.append("contam", style="bold")
    text.append(f"  elapsed {_elapsed(lanes, now)}\n")
    _append_header(text, layout)
    for stats, row in zip(lanes, rows):
        _append_row(text, row, layout)
        for replica in stats.replicas:
            text.append(f"  └ {replica_line(replica)}\n", style="dim")
    _append_line(text, [("─" * w, "dim") for w in layout.widths], layout, _main_columns(layout))
    _append_row(text, totals, layout, end="")
    return text


def _nothing_to_do(lanes: Sequence[LaneStats]) -> str:
    labels = ", ".join(_safe(s.label) for s in lanes)
    return f"every item already answered by {labels}" if lanes else "no models"


def _layout(rows: Sequence[Sequence[Cell]], width: int | None, ascii_bar: bool) -> Layout:
    widths = [max(len(name), *(len(row[i][0]) for row in rows)) for i, name in enumerate(COLUMNS)]
    bar_index = COLUMNS.index("progress")
    others = sum(widths) - widths[bar_index] + len(_GAP) * (len(COLUMNS) - 1)
    room = BAR_WIDTH if width is None else width - 1 - others  # the last column is never flush
    if room >= 0:  # one line per model, with a bar if there is room for a useful one
        bar = min(BAR_WIDTH, room) if room >= _MIN_BAR else 0
        widths[bar_index] = bar
        return Layout(tuple(widths), width or 0, bar, two_lines=False, ascii_bar=ascii_bar)
    return _two_line_layout(widths, width or 0, ascii_bar)


def _two_line_layout(widths: list[int], width: int, ascii_bar: bool) -> Layout:
    line_one = [c for c in COLUMNS if c not in _DETAILS and c != "progress"]
    used = sum(widths[COLUMNS.index(c)] for c in line_one) + len(_GAP) * len(line_one)
    bar = min(BAR_WIDTH, width - 1 - used)
    bar = bar if bar >= _MIN_BAR else 0
    widths[COLUMNS.index("progress")] = bar
    return Layout(tuple(widths), width, bar, two_lines=True, ascii_bar=ascii_bar)


def _main_columns(layout: Layout) -> tuple[str, ...]:
    return tuple(c for c in COLUMNS if (c != "progress" or layout.bar)
                 and not (layout.two_lines and c in _DETAILS))


def _append_header(text: StyledLines, layout: Layout) -> None:
    columns = _main_columns(layout)
    _append_line(text, [(name, "bold") for name in COLUMNS], layout, columns)


def _append_row(text: StyledLines, cells: Sequence[Cell], layout: Layout, end: str = "\n") -> None:
    _append_line(text, cells, layout, _main_columns(layout), end="\n" if layout.two_lines else end)
    if layout.two_lines:
        details = [f"{name} {cells[COLUMNS.index(name)][0]}" for name in _DETAILS
                   if cells[COLUMNS.index(name)][0] not in ("", "-")]
        text.append("\n".join(_wrapped(details, layout.width)) + end, style="dim")


def _wrapped(words: Sequence[str], width: int, indent: str = "    ") -> list[str]:
    """``words`` on indented lines of at most ``width`` columns (a detail is never cut)."""
    lines = [indent]
    for word in words:
        if lines[-1] != indent and len(lines[-1]) + len(_GAP) + len(word) >= width:
            lines.append(indent)
        lines[-1] += (_GAP if lines[-1] != indent else "") + word
    return lines


def _append_line(text: StyledLines, cells: Sequence[Cell], layout: Layout,
                 columns: Sequence[str], end: str = "\n") -> None:
    shown = [(c, cell, w) for c, cell, w in zip(COLUMNS, cells, layout.widths) if c in columns]
    for n, (column, (value, style), width) in enumerate(shown):
        if style == "bar":
            _append_bar(text, value, layout)
        elif column in _LEFT:
            text.append(value.ljust(width) if n < len(shown) - 1 else value, style=style)
        else:
            text.append(value.rjust(width), style=style)
        if n < len(shown) - 1:
            text.append(_GAP)
    text.append(end)


def _append_bar(text: StyledLines, value: str, layout: Layout) -> None:
    if not value:  # the totals row has no bar
        text.append(" " * layout.bar)
        return
    done, total = (int(part) for part in value.split("/"))
    filled = round(layout.bar * done / total) if total else layout.bar
    full, empty = ("#", "-") if layout.ascii_bar else ("━", "━")
    text.append(full * filled, style="bar.finished" if done >= total else "bar.complete")
    text.append(empty * (layout.bar - filled), style="bar.back")


def replica_line(replica: ReplicaStats) -> str:
    """One replica of a model, compactly: where, in flight, replies, errors, cool-down; or why
    its preflight left it out."""
    cooling = replica.cooling_for()
    where = _safe(replica.url.removeprefix("http://").removeprefix("https://"))
    if replica.left_out:
        return f"{where}  left out ({replica.left_out})"
    return (f"{where}  in flight {replica.in_flight}  ok {replica.ok}  errors {replica.errors}"
            + (f"  cooling {cooling:.1f}s" if cooling > 0 else ""))


def _row(stats: LaneStats, now: float, rate_now: float, rpm_now: float | None) -> list[Cell]:
    cooling = stats.cooling_for()
    status = "bold red" if stats.stopped else ("green" if stats.state == "done" else "")
    values = [_safe(stats.label), f"{stats.done}/{stats.total}", f"{stats.done}/{stats.total}",
              rate_text(rate_now), rate_text(stats.average_rate(now)),
              f"{stats.in_flight}/{stats.cap}", _rpm(rpm_now, stats.rpm_limit),
              str(stats.retries), str(stats.rate_limited), f"{cooling:.1f}s" if cooling > 0 else "-",
              str(stats.failed), stats.state]
    cells = [(value, "") for value in values]
    cells[1] = (values[1], "bar")
    cells[-1] = (values[-1], status)
    return cells


def _totals(lanes: Sequence[LaneStats], now: float, meter: RateMeter,
            rates: Sequence[float]) -> list[Cell]:
    done, total = sum(s.done for s in lanes), sum(s.total for s in lanes)
    active = [rate for s, rate in zip(lanes, rates) if _active(s)]
    values = ["total", "", f"{done}/{total}", rate_text(sum(active)) if active else "-",
              rate_text(sum(s.average_rate(now) for s in lanes)),
              f"{sum(s.in_flight for s in lanes)}/{sum(s.cap for s in lanes)}", "",
              str(sum(s.retries for s in lanes)), str(sum(s.rate_limited for s in lanes)), "",
              str(sum(s.failed for s in lanes)), _eta(lanes, meter, now)]
    return [(value, "bold") for value in values]


def plain_lines(lanes: Sequence[LaneStats], meter: RateMeter, now: float | None = None) -> list[str]:
    """The same figures as the table, one log line per lane plus a totals line."""
    now = time.monotonic() if now is None else now
    if not sum(s.total for s in lanes):
        return [f"nothing to do ({_nothing_to_do(lanes)})"]
    lines, rates = [], []
    for s in lanes:
        rate_now, rpm_now = meter.sample(s, now)
        rates.append(rate_now if _active(s) else None)
        cooling = s.cooling_for()
        lines.append(
            f"{_safe(s.label)}: {s.done}/{s.total} answered, {rate_text(rate_now)} now, "
            f"{rate_text(s.average_rate(now))} avg, in flight {s.in_flight}/{s.cap}, "
            f"rpm {_rpm(rpm_now, s.rpm_limit)}, retries {s.retries}, 429s {s.rate_limited}, "
            + (f"cooling down {cooling:.1f}s, " if cooling > 0 else "")
            + f"failed {s.failed}, {s.state}")
        lines += [f"{_safe(s.label)} replica {replica_line(replica)}"
                  for replica in s.replicas]
    done, total = sum(s.done for s in lanes), sum(s.total for s in lanes)
    active = [rate for rate in rates if rate is not None]
    lines.append(f"total: {done}/{total} answered, {rate_text(sum(active)) if active else '-'}, "
                 f"elapsed {_elapsed(lanes, now)}, {_eta(lanes, meter, now)}")
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
                          get_renderable=self._render)

    def _render(self) -> StyledLines:
        # Read each time: the terminal may be resized during a run.
        return render_table(self.lanes, self.meter, width=self.console.width,
                            ascii_bar=self.console.no_color or self.console.color_system is None)

    def note(self, message: str) -> None:
        self._live.console.print(_safe(message), markup=False, highlight=False)

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
            print(_safe(message), file=self.file, flush=True)

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
