"""A long job serves its store to other processes while it holds it: reads, label appends and
its live progress (the store host, :mod:`contam.harness.store.host`; `contam sql`, `contam report` and
`contam view` read through it).

:func:`serving_reads` starts the host on the job's open store and hands back a
:class:`LiveBoard`, which the job shows its lanes' counters (``JobOptions.live``); the host asks
the board for them on each progress request.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from contam.harness.display import RateMeter
from contam.harness.engine.counters import LaneStats
from contam.harness.store import Store
from contam.harness.store.host import StoreHost

log = logging.getLogger(__name__)

__all__ = ["LiveBoard", "serving_reads"]


class LiveBoard:
    """The counters of the lanes a job runs, as rows for ``live_progress``. Rates come from a
    meter of its own (the display's kind: answers per second over the last ten seconds)."""

    def __init__(self) -> None:
        self._lanes: Sequence[LaneStats] = []
        self._meter = RateMeter()
        self._lock = threading.Lock()  # the host may ask from several worker threads at once

    def watch(self, lanes: Sequence[LaneStats]) -> None:
        """Show these lanes from now on: the list itself, so lanes the job adds to it later (a
        second pass's) show too."""
        with self._lock:
            self._lanes = lanes

    def rows(self) -> list[dict[str, Any]]:
        with self._lock:
            now = time.monotonic()
            return [lane.progress(self._meter.sample(lane, now)[0]) for lane in self._lanes]


@contextmanager
def serving_reads(store: Store, command: str) -> Iterator[LiveBoard]:
    """Serve ``store``'s reads while the block runs. From here on DuckDB in this process has
    no file or network access of its own (see :mod:`contam.harness.store.readonly`). A host that cannot
    start is logged and the job goes on: readers are then told the store is busy."""
    board = LiveBoard()
    host = StoreHost(store, command=command, progress=board.rows)
    try:
        host.start()
    except (OSError, RuntimeError) as exc:
        log.warning("%s: other commands cannot read the store while %s runs (%s)", store.path,
                    command, exc)
        yield board
        return
    try:
        yield board
    finally:
        host.stop()
