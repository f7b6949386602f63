"""The reply journal: every accepted reply is on disk before it waits for a commit.

The batch writer (:mod:`harness.engine.writer`) commits replies a quarter of a second to a second
after they arrive; a kill -9 in between would lose replies that were paid for. So each reply's
rows are first appended to ``<store>.journal``, beside the store, as one orjson line and a flush:
the line is then in the kernel's page cache, which a killed process cannot lose (only a power cut
could; an fsync per reply would cover that too, at a far higher price). Each commit takes every
write waiting, so after it the journal is emptied: it never holds more than one batch.

The next writer to open the store (:class:`harness.store.Store`) replays the journal: every
write whose ``ok`` attempt (``run_id``, ``item_id``, ``model``, ``attempt``, and for a probe's
request its ``variant`` and ``samples``) the store lacks is
inserted, in one transaction, and the journal is removed. Replaying twice adds nothing. A line
cut short by the kill (the last one) is skipped: its reply was never whole on disk.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import orjson

from harness.store.files import open_own

if TYPE_CHECKING:  # the store calls replay(); this module needs only its type
    from harness.store import Store

__all__ = ["Journal", "Rows", "journal_path", "reply_key", "replay", "merge_writes"]

Rows = Mapping[str, Sequence[Mapping[str, Any]]]  # table name -> rows
_KEY = ("run_id", "item_id", "model", "attempt", "variant", "samples")


def journal_path(store_path: str | Path) -> Path:
    path = Path(store_path)
    return path.with_name(path.name + ".journal")


def reply_key(rows: Rows) -> Mapping[str, Any] | None:
    """The ``ok`` attempts row of a write (what identifies a reply); None for a failed one."""
    for row in rows.get("attempts", ()):
        if row.get("outcome") == "ok":
            return row
    return None


class Journal:
    """The append-only file one writer keeps while it is open."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = open_own(path)  # never a planted link or someone else's file

    def append(self, rows: Rows) -> None:
        """Write one reply's rows (timestamps as ISO text) and flush them to the kernel."""
        self._file.write(orjson.dumps(rows) + b"\n")
        self._file.flush()  # into the page cache: safe from kill -9

    def clear(self) -> None:
        """After a commit that took every journaled reply: empty the file in place."""
        os.ftruncate(self._file.fileno(), 0)  # every line was flushed; appends restart at 0

    def close(self, *, committed: bool) -> None:
        """Close; remove the file when everything in it reached the store."""
        self._file.close()
        if committed:
            self.path.unlink(missing_ok=True)


def replay(store: Store) -> int:
    """Insert the journaled writes the store lacks, in one transaction, then remove the journal;
    returns how many writes were missing."""
    path = journal_path(store.path)
    if not path.exists():
        return 0
    writes = list(_whole_writes(path.read_bytes()))
    missing = _missing(store.con, writes)
    if missing:
        with store.transaction():
            for table, rows in merge_writes(missing).items():
                store.append(table, rows)
    path.unlink()
    return len(missing)


def _whole_writes(data: bytes) -> Iterator[dict[str, list[dict[str, Any]]]]:
    for line in data.split(b"\n"):
        if line:
            try:
                yield orjson.loads(line)
            except orjson.JSONDecodeError:  # cut short by the kill: never acknowledged whole
                continue


def _missing(con: duckdb.DuckDBPyConnection, writes: list[dict]) -> list[dict]:
    """The writes whose ok attempt is not in the store (one query for all of them)."""
    if not writes:  # killed just after a commit emptied the journal
        return []
    keys = [reply_key(write) or {} for write in writes]
    columns = [[key.get(name) for key in keys] for name in _KEY]
    present = con.execute(
        "SELECT n FROM (SELECT unnest(range(len($1))) AS n, unnest($1) AS run_id, "
        "unnest($2) AS item_id, unnest($3) AS model, unnest($4) AS attempt, "
        "unnest($5::VARCHAR[]) AS variant, unnest($6::INTEGER[][]) AS samples) k "
        "WHERE EXISTS (SELECT 1 FROM attempts a WHERE a.outcome = 'ok' AND a.run_id = k.run_id "
        "AND a.item_id = k.item_id AND a.model = k.model AND a.attempt = k.attempt "
        "AND a.variant IS NOT DISTINCT FROM k.variant "
        "AND a.samples IS NOT DISTINCT FROM k.samples)",
        columns).fetchall()
    done = {row[0] for row in present}
    return [write for n, write in enumerate(writes) if n not in done and keys[n]]


def merge_writes(writes: Iterable[Rows]) -> dict[str, list[Mapping[str, Any]]]:
    """Several writes' rows gathered per table, in order (one INSERT per table)."""
    merged: dict[str, list[Mapping[str, Any]]] = {}
    for rows in writes:
        for table, table_rows in rows.items():
            merged.setdefault(table, []).extend(table_rows)
    return merged
