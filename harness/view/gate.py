"""The app's one way to the store: every read and write goes through here, one at a time.

While no job has the store, the gate keeps one read-only connection open and answers every read
on it, so that a request pays for its query and nothing else. It never keeps a job from the store:
a process that needs to write and finds the store open asks for it (:mod:`harness.store.wanted`),
and a watcher thread here sees the ask within :data:`POLL_S`, closes the connection and keeps off
the store for a while; meanwhile, and whenever a job holds the store, each read goes through
:mod:`harness.store.access` as one short visit (through the job's host while it runs). The view's
own label writes close the kept connection for the moment of the write (see ARCHITECTURE.md,
"The store").

One at a time because DuckDB refuses, within one process, a read-only and a read-write
connection to the same file at once; requests are short, so waiting is cheap.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.store import access
from harness.store.discovery import find_holder
from harness.store.store import Store, StoreInUse
from harness.store.wanted import HOLD_OFF_S, last_asked

__all__ = ["StoreGate", "POLL_S"]

POLL_S = 0.05  # how often the watcher looks for a writer's ask while a connection is kept


class StoreGate:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.lock = threading.RLock()  # held by a caller across a write and the read after it
        self.opens = 0  # read-only connections kept so far (what the tests count)
        self._kept: Store | None = None
        self._ask_seen = 0.0  # last_asked() when it was opened: any other value means let go

    @contextmanager
    def reading(self) -> Iterator[Any]:
        with self.lock:
            kept = self._keep()
            if kept is not None:
                yield kept
                return
            with access.reading(self.path) as store:
                yield store

    def append_labels(self, rows: Sequence[Mapping[str, Any]]) -> int:
        """Committed when this returns: only then may a page say the label is saved."""
        with self.lock:
            self.let_go()  # DuckDB lets this process write only once its reader is closed
            return access.append_labels(self.path, rows)

    def append_label_sessions(self, rows: Sequence[Mapping[str, Any]]) -> int:
        with self.lock:
            self.let_go()
            return access.append_labels(self.path, rows, "label_sessions")

    def live_progress(self) -> list[dict[str, Any]] | None:
        """Asked of the holding job's host, never of DuckDB: no need to wait for the lock."""
        return access.live_progress(self.path)

    def let_go(self) -> None:
        """Close the kept connection (the next read opens one again, if nobody wants the store)."""
        with self.lock:
            if self._kept is not None:
                self._kept.close()
                self._kept = None

    @property
    def keeping(self) -> bool:
        return self._kept is not None

    def _keep(self) -> Store | None:
        """The kept connection, opened if no writer asked lately and no job holds the store."""
        asked = last_asked(self.path)
        if self._kept is not None and self.asked_since_open(asked):
            self.let_go()
        if self._kept is None and asked < time.time() - HOLD_OFF_S \
                and find_holder(self.path) is None:
            self._open(asked)
        return self._kept

    def asked_since_open(self, asked: float) -> bool:
        # Compared for change, not for being later: file times come from a coarser clock.
        return asked != self._ask_seen

    def _open(self, asked: float) -> None:
        try:
            self._kept = Store(self.path, read_only=True, lock_wait_s=0)
        except StoreInUse:  # a writer that serves no reads has it: access waits for it
            return
        self._ask_seen = asked
        self.opens += 1
        threading.Thread(target=_watch, args=(weakref.ref(self), self.opens), daemon=True,
                         name="contam-view-gate").start()


def _watch(gate_ref: "weakref.ref[StoreGate]", opened: int) -> None:
    """Close the gate's kept connection (its ``opened``-th) as soon as a writer asks for the
    store; ends when that connection is closed (the next one has a watcher of its own) or the
    gate is gone (a gate no one uses closes its connection when it is collected)."""
    while True:
        time.sleep(POLL_S)
        gate = gate_ref()
        if gate is None or gate._kept is None or gate.opens != opened:
            return
        if gate.asked_since_open(last_asked(gate.path)):
            gate.let_go()
            return
        del gate  # the gate is not kept alive by its watcher
