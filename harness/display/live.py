"""The rich live display of a run, refreshed from the event loop, and :func:`open_progress`,
which picks it on a terminal and the plain lines elsewhere."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from rich.console import Console
from rich.live import Live

from contam.harness.display.figures import safe
from contam.harness.display.plain import PlainProgress
from contam.harness.display.rates import RateMeter
from contam.harness.display.table import StyledLines, render_table
from contam.harness.engine.counters import LaneStats

__all__ = ["LiveProgress", "open_progress"]

REFRESH_PER_S = 4


class LiveProgress:
    """The rich Live table, refreshed ``REFRESH_PER_S`` times a second.

    Inside a running event loop (every command), the refresh is a callback on that loop, not
    rich's own refresh thread: a render takes ~5 ms of CPU whatever the load, and from a second
    thread the hand-overs of the GIL with the event loop doubled that and taxed every request
    too (the same lesson as the writer's, see :mod:`contam.harness.engine.writer`). Without a running loop it
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
        self._live.console.print(safe(message), markup=False, highlight=False)

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


def open_progress(lanes: Sequence[LaneStats], *, no_progress: bool = False,
                  console: Console | None = None, interval_s: float = 5.0
                  ) -> LiveProgress | PlainProgress:
    """The live table on a terminal; plain lines with ``--no-progress`` or when not a terminal."""
    console = console or Console()
    if no_progress or not console.is_terminal:
        return PlainProgress(lanes, console.file, interval_s)
    return LiveProgress(lanes, console)
