"""The file beside a store (``<store>.host``) that says which process holds the store for
writing and how to reach the reads it serves (:mod:`contam.harness.store.host`).

It holds the pid, the command, the host's Unix socket and a random token, so it is written with
mode 0600, all at once (a reader never sees half a file), when the host is up, and removed when
it stops. A file that is not this user's own 0600 file, or names a dead process, is ignored: a
``kill -9`` leaves one behind, and the next process to hold the store replaces it.
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson

from contam.harness.errors import UserError
from contam.harness.store.files import write_private

__all__ = ["Holder", "HostGone", "discovery_path", "publish", "withdraw", "find_holder", "pid_alive"]


class HostGone(UserError):
    """A holder's host stopped answering: its job has finished (or is finishing) or was killed."""


@dataclass(frozen=True)
class Holder:
    """A process that holds a store and serves its reads."""

    pid: int
    command: str  # run | judge | score | probe ...
    socket: str  # the host's Unix socket
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)
    started_at: str = field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat())


def discovery_path(store: str | Path) -> Path:
    store = Path(store)
    return store.with_name(store.name + ".host")


def publish(store: str | Path, holder: Holder) -> Path:
    """Write the discovery file: a new 0600 file (:mod:`contam.harness.store.files`), renamed over any
    stale one."""
    path = discovery_path(store)
    write_private(path, orjson.dumps(asdict(holder)))  # never follows a planted link
    return path


def withdraw(store: str | Path, holder: Holder) -> None:
    """Remove the discovery file if it is still this holder's."""
    path = discovery_path(store)
    if _read(path) == holder:
        path.unlink(missing_ok=True)


def find_holder(store: str | Path) -> Holder | None:
    """The holder the discovery file names, if the file is this user's own 0600 file and its
    process is alive; None otherwise (whether its host answers is for the caller to find)."""
    holder = _read(discovery_path(store))
    return holder if holder is not None and pid_alive(holder.pid) else None


def _read(path: Path) -> Holder | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            return None  # someone else's, or readable by others: not to be trusted
        try:
            return Holder(**orjson.loads(file.read()))
        except (orjson.JSONDecodeError, TypeError):
            return None


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (one we may not signal still counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
