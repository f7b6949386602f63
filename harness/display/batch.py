"""The display of a batch job (``contam score``): a rich progress bar per metric on a terminal,
otherwise a plain line every few seconds, both on stderr."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from contam.harness.display.figures import safe

__all__ = ["BatchProgress"]

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
        """One line; a configured name in it (a BERTScore model) cannot restyle the terminal."""
        print(safe(message), file=sys.stderr, flush=True)


class _Task:
    def __enter__(self) -> Callable[[int], None]:
        return self.advance

    def __exit__(self, *exc: object) -> None:
        pass

    def advance(self, n: int) -> None:
        raise NotImplementedError

    def describe(self, text: str) -> None:
        """A new description (``contam plant``: the epoch and the loss)."""
        self.metric = text


class _PlainTask(_Task):
    """The rate and time left come from measured work only: from the end of the first advance
    on, so that set-up and a slow first step (a fine-tune's warm-up) do not inflate them."""

    def __init__(self, metric: str, total: int, unit: str) -> None:
        self.metric, self.total, self.unit, self.done = metric, total, unit, 0
        self.last = time.monotonic()
        self.first: tuple[float, int] | None = None  # (when, done) at the end of the first advance

    def advance(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if self.first is None:
            self.first = (now, self.done)
        if now - self.last >= _PLAIN_EVERY_S and self.done < self.total:
            self.last = now
            print(f"{self.metric}: {self.done}/{self.total} ({self._pace(now)})",
                  file=sys.stderr, flush=True)

    def _pace(self, now: float) -> str:
        since, done_then = self.first or (now, self.done)
        if self.done == done_then:
            return f"measuring {self.unit}/s"
        rate = (self.done - done_then) / max(now - since, 1e-9)
        left = (self.total - self.done) / max(rate, 1e-9)
        return f"{_rate(rate)} {self.unit}/s, {left:,.0f} s left"


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
        self.progress.update(self.task_id, advance=n, rate=_rate(rate))

    def describe(self, text: str) -> None:
        self.progress.update(self.task_id, description=safe(text))


def _rate(per_second: float) -> str:
    """Whole numbers for fast jobs (rows/s), two digits for slow ones (a fine-tune's steps/s)."""
    return f"{per_second:,.0f}" if per_second >= 10 else f"{per_second:.2g}"
