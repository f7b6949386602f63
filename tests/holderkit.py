"""Another process that holds a store for writing, serving no reads (as a script of the user's
would) or serving them (as a job does): what `contam view` must let have the store."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["held_elsewhere"]

ROOT = Path(__file__).resolve().parents[1]
_HOLD = """
import contextlib, sys
from contam.harness.store import Store
from contam.harness.store.host import StoreHost
with Store(sys.argv[1]) as store:  # waits LOCK_WAIT_S for the store, asking a view to let go
    with StoreHost(store, command="run") if sys.argv[2] == "serve" else contextlib.nullcontext():
        print("held", flush=True)
        sys.stdin.read()  # until the test closes our stdin
"""


@contextmanager
def held_elsewhere(path: Path, *, serve: bool = False) -> Iterator[subprocess.Popen]:
    """A child process holding ``path`` open for writing for the length of the ``with``; with
    ``serve``, serving its reads as a job does (:mod:`contam.harness.store.host`)."""
    child = subprocess.Popen([sys.executable, "-c", _HOLD, str(path), "serve" if serve else "-"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        line = child.stdout.readline()
        assert line == "held\n", f"the holder did not get the store: {line!r} {child.stderr.read()}"
        yield child
    finally:
        child.stdin.close()
        child.wait(30)
