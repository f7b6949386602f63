"""The file beside a store (``<store>.wanted``) by which a process that needs the store asks
whoever keeps it open between requests (`contam view`, :mod:`contam.harness.view.gate`) to let go.

A view that keeps the store open keeps every other process out: DuckDB lets one process write a
file, and none read it while one writes. So a process that finds the store open and served by no
job drops this file (:func:`ask_for`, written as :mod:`contam.harness.store.files` writes every file
beside a store) and tries again for a few seconds; the view watches its modification time
(:func:`last_asked`, one ``lstat``), closes, and keeps off the store for :data:`HOLD_OFF_S` while
the ask stands. The asker removes the file once it has the store (:func:`withdraw_ask`). See
ARCHITECTURE.md, "A view that keeps the store open".
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from contam.harness.errors import UserError
from contam.harness.store.files import write_private

__all__ = ["wanted_path", "ask_for", "last_asked", "withdraw_ask", "HOLD_OFF_S"]

# How long after an ask a reader keeps off: longer than a writer waits for the store (LOCK_WAIT_S).
HOLD_OFF_S = 10.0


def wanted_path(store: str | Path) -> Path:
    store = Path(store)
    return store.with_name(store.name + ".wanted")


def ask_for(store: str | Path) -> None:
    """Ask the store's readers to let go; a store whose folder is not writable asks nobody (its
    writer will be refused anyway, in its own words)."""
    try:
        write_private(wanted_path(store), f"{os.getpid()}\n".encode())
    except UserError:
        pass


def last_asked(store: str | Path) -> float:
    """When a writer last asked (the file's mtime, in ``time.time()`` seconds); 0 when none has,
    or when the file is not this user's own regular file (nobody else may make a reader let go)."""
    try:
        info = os.lstat(wanted_path(store))
    except OSError:
        return 0.0
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        return 0.0
    return info.st_mtime


def withdraw_ask(store: str | Path) -> None:
    wanted_path(store).unlink(missing_ok=True)
