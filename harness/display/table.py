"""The live table, laid out by hand for the terminal's width: the columns, a bar when there is
room for one, each model's details on a second line when there is not, and the segments handed
to rich ready-styled."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions
from rich.segment import Segment

from contam.harness.display.figures import (
    elapsed_text, eta_text, is_active, nothing_to_do, rate_text, replica_line, rpm_text, safe,
)
from contam.harness.display.rates import RateMeter
from contam.harness.engine.counters import LaneStats

__all__ = ["render_table", "StyledLines", "COLUMNS"]

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
        text.append(f"contam: nothing to do ({nothing_to_do(lanes)})", style="bold")
        return text
    samples = [meter.sample(stats, now) for stats in lanes]
    rows = [_row(stats, now, *sample) for stats, sample in zip(lanes, samples)]
    totals = _totals(lanes, now, meter, [rate for rate, _ in samples])
    layout = _layout([*rows, totals], width, ascii_bar)
    text.append("contam", style="bold")
    text.append(f"  elapsed {elapsed_text(lanes, now)}\n")
    _append_header(text, layout)
    for stats, row in zip(lanes, rows):
        _append_row(text, row, layout)
        for replica in stats.replicas:
            text.append(f"  └ {replica_line(replica)}\n", style="dim")
    _append_line(text, [("─" * w, "dim") for w in layout.widths], layout, _main_columns(layout))
    _append_row(text, totals, layout, end="")
    return text





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


def _row(stats: LaneStats, now: float, rate_now: float, rpm_now: float | None) -> list[Cell]:
    cooling = stats.cooling_for()
    status = "bold red" if stats.stopped else ("green" if stats.state == "done" else "")
    values = [safe(stats.label), f"{stats.done}/{stats.total}", f"{stats.done}/{stats.total}",
              rate_text(rate_now), rate_text(stats.average_rate(now)),
              f"{stats.in_flight}/{stats.cap}", rpm_text(rpm_now, stats.rpm_limit),
              str(stats.retries), str(stats.rate_limited), f"{cooling:.1f}s" if cooling > 0 else "-",
              str(stats.failed), stats.state]
    cells = [(value, "") for value in values]
    cells[1] = (values[1], "bar")
    cells[-1] = (values[-1], status)
    return cells


def _totals(lanes: Sequence[LaneStats], now: float, meter: RateMeter,
            rates: Sequence[float]) -> list[Cell]:
    done, total = sum(s.done for s in lanes), sum(s.total for s in lanes)
    active = [rate for s, rate in zip(lanes, rates) if is_active(s)]
    values = ["total", "", f"{done}/{total}", rate_text(sum(active)) if active else "-",
              rate_text(sum(s.average_rate(now) for s in lanes)),
              f"{sum(s.in_flight for s in lanes)}/{sum(s.cap for s in lanes)}", "",
              str(sum(s.retries for s in lanes)), str(sum(s.rate_limited for s in lanes)), "",
              str(sum(s.failed for s in lanes)), eta_text(lanes, meter, now)]
    return [(value, "bold") for value in values]
