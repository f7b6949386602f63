"""The app's one way to the store: every read and write goes through here, one at a time.

While nobody else wants the store, the gate keeps one connection open and answers every request
on it, so a request pays for its query and nothing else. Kept read-only while idle: DuckDB lets
any number of processes read a file together, so a user's own DuckDB client
(``duckdb.connect(path, read_only=True)``, the DuckDB CLI with ``-readonly``) reads beside the
view. A write makes it read-write (a label is then one INSERT) for as long as labels keep coming,
and read-only again once none has come for ``WRITE_HOLD_S``; a write that finds another process
reading goes through :mod:`contam.harness.store.access`, which waits for the store and says who has it. It never keeps anyone from the store: a process
that finds the store open asks for it (:mod:`contam.harness.store.wanted`), and a watcher thread here sees
the ask within :data:`POLL_S`, closes the connection and keeps off the store for ``HOLD_OFF_S``.
Meanwhile, and whenever a job holds the store, each request goes through
:mod:`contam.harness.store.access` as one short visit (through the job's host while it runs). See
ARCHITECTURE.md, "A view that keeps the store open".

One at a time because DuckDB refuses, within one process, a second connection to the same file
with other settings; requests are short, so waiting is cheap.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from contam.harness.errors import UserError
from contam.harness.store import access
from contam.harness.store.discovery import find_holder
from contam.harness.store.labels import append_labels_to
from contam.harness.store.store import Store, StoreInUse
from contam.harness.store.wanted import HOLD_OFF_S, last_asked

__all__ = ["StoreGate", "POLL_S", "WRITE_HOLD_S"]

POLL_S = 0.05  # how often the watcher looks for an ask while a connection is kept
WRITE_HOLD_S = 2.0  # a read-write connection kept this long after the last write, for the next


class StoreGate:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.lock = threading.RLock()  # held by a caller across a write and the read after it
        self.opens = 0  # connections kept so far (what the tests count)
        self._kept: Store | None = None
        self._ask_seen = 0.0  # last_asked() when it was opened: any other value means let go
        self._written_at = 0.0  # time.monotonic() of the last write on a read-write connection

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
        return self._append(rows, "labels")

    def append_label_sessions(self, rows: Sequence[Mapping[str, Any]]) -> int:
        return self._append(rows, "label_sessions")

    def live_progress(self) -> list[dict[str, Any]] | None:
        """Asked of the holding job's host, never of DuckDB: no need to wait for the lock."""
        return access.live_progress(self.path)

    def let_go(self) -> None:
        """Close the kept connection (the next request opens one again, if nobody wants the store)."""
        with self.lock:
            if self._kept is not None:
                self._kept.close()
                self._kept = None

    @property
    def keeping(self) -> bool:
        return self._kept is not None

    @property
    def keeping_read_only(self) -> bool:
        """A connection is kept, and it is read-only (other processes may read beside it)."""
        return self._kept is not None and self._kept.read_only

    def asked_since_open(self, asked: float) -> bool:
        # Compared for change, not for being later: file times come from a coarser clock.
        return asked != self._ask_seen

    def _append(self, rows: Sequence[Mapping[str, Any]], table: str) -> int:
        with self.lock:
            kept = self._writable()
            if kept is None:  # another process has the store: access waits for it, or says who
                return access.append_labels(self.path, rows, table)
            appended = append_labels_to(kept, rows, table)
            self._written_at = time.monotonic()
            return appended

    def _writable(self) -> Store | None:
        """The kept connection made read-write (DuckDB lets this process open the file for
        writing only once its reader is closed); None when another process has the store."""
        kept = self._keep()
        if kept is not None and not kept.read_only:
            return kept
        self.let_go()
        if kept is not None:
            self._open(self._ask_seen, read_only=False)
        return self._kept

    def writing_idle(self) -> bool:
        """A read-write connection kept with no write for WRITE_HOLD_S: time to read only."""
        kept = self._kept
        return (kept is not None and not kept.read_only
                and time.monotonic() - self._written_at > WRITE_HOLD_S)

    def read_only_again(self) -> None:
        """The idle read-write connection swapped for a read-only one (the watcher's call)."""
        with self.lock:
            if self.writing_idle():
                asked = self._ask_seen
                self.let_go()
                self._open(asked, read_only=True)

    def _keep(self) -> Store | None:
        """The kept connection, opened if nobody asked for the store lately and no job holds it."""
        asked = last_asked(self.path)
        if self._kept is not None and self.asked_since_open(asked):
            self.let_go()
        if self._kept is None and asked < time.time() - HOLD_OFF_S \
                and find_holder(self.path) is None:
            self._open(asked, read_only=True)
        return self._kept

    def _open(self, asked: float, *, read_only: bool) -> None:
        try:
            self._kept = Store(self.path, read_only=read_only, lock_wait_s=0)
        except StoreInUse:  # someone else has it: access reaches it as before
            return
        except UserError:  # not writable here: access says so
            if read_only:
                raise
            return
        self._ask_seen = asked
        self.opens += 1
        threading.Thread(target=_watch, args=(weakref.ref(self), self.opens), daemon=True,
                         name="contam-view-gate").start()


def _watch(gate_ref: "weakref.ref[StoreGate]", opened: int) -> None:
    """Close the gate's kept connection (its ``opened``-th) as soon as someone asks for the
    store, or swap it for a read-only one once writes have stopped; ends when that connection is closed (the next one has a watcher of its own) or the
    gate is gone (a gate no one uses closes its connection when it is collected)."""
    while True:
        time.sleep(POLL_S)
        gate = gate_ref()
        if gate is None or gate._kept is None or gate.opens != opened:
            return
        if gate.asked_since_open(last_asked(gate.path)):
            gate.let_go()
            return
        if gate.writing_idle():
            gate.read_only_again()  # with a watcher of its own
            return
        del gate  # the gate is not kept alive by its watcher
