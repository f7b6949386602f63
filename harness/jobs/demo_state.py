"""Whether `contam demo` run again has anything to do after its answers: the store's state when
the last demo finished its report, kept beside it (``OUT/.demo-state.json``).

The store only ever grows, so the row count of each table (all but ``imports``, which logs every
import, even one that added nothing) says whether anything the scores or the report read has
changed; the contam version and ``--probes`` are part of it, since either changes the report.
Unchanged, the demo skips scoring (which loads torch and the encoder just to find nothing due)
and rewriting the same report: a rerun takes seconds rather than half a minute.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from contam.harness import __version__
from contam.harness.store import Store
from contam.harness.store.schema import TABLE_COLUMNS

__all__ = ["unchanged_since_last_report", "remember_report"]

STATE_NAME = ".demo-state.json"
_LOGS = frozenset({"imports"})  # grows on every run, whatever it adds


def unchanged_since_last_report(store: Store, out: Path, *, probes: bool) -> bool:
    """True when the last demo's report in ``out`` was written from this very state."""
    try:
        kept = orjson.loads((out / STATE_NAME).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return False
    return kept == _state(store, probes) and (out / "report.json").exists()


def remember_report(store: Store, out: Path, *, probes: bool) -> None:
    """Record the state the report in ``out`` was just written from."""
    (out / STATE_NAME).write_bytes(orjson.dumps(_state(store, probes)))


def _state(store: Store, probes: bool) -> dict[str, Any]:
    counts = {table: store.count(table) for table in TABLE_COLUMNS if table not in _LOGS}
    return {"version": __version__, "probes": probes, "rows": counts}
