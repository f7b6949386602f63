"""The reply journal: every accepted reply is on disk before it waits for a commit.

The batch writer (:mod:`contam.harness.engine.writer`) commits replies a quarter of a second to a second
after they arrive; a kill -9 in between would lose replies that were paid for. So each reply's
rows are first appended to ``<store>.journal``, beside the store, as one orjson line and a flush:
the line is then in the kernel's page cache, which a killed process cannot lose (only a power cut
could; an fsync per reply would cover that too, at a far higher price). Each commit takes every
write waiting, so after it the journal is emptied: it never holds more than one batch.

The next writer to open the store (:class:`contam.harness.store.Store`) replays the journal: every
write whose ``ok`` attempt (``run_id``, ``item_id``, ``model``, ``attempt``, and for a probe's
request its ``variant`` and ``samples``) the store lacks is
inserted, in one transaction, and the journal is removed. Replaying twice adds nothing. A line
cut short by the kill (the last one) is skipped: its reply was never whole on disk; so is any
other line that is not a reply's rows of the store's tables, and the skipped lines are counted.
Only the user's own 0600 journal is replayed: one another user planted is refused.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import orjson

from contam.harness.errors import UserError
from contam.harness.store.files import not_own_reason, open_own, stat_reason
from contam.harness.store.schema import TABLE_COLUMNS

if TYPE_CHECKING:  # the store calls replay(); this module needs only its type
    from contam.harness.store import Store

__all__ = ["Journal", "Rows", "Replayed", "journal_path", "reply_key", "replay", "merge_writes"]

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
        """Write one reply's rows (timestamps as ISO text) straight to the kernel's page cache
        (safe from kill -9). On a failed write (a full disk) the line's start is cut off again,
        so the journal keeps only whole lines, and the OSError is raised."""
        fd = self._file.fileno()
        start = os.lseek(fd, 0, os.SEEK_END)
        line = memoryview(orjson.dumps(rows) + b"\n")
        try:
            while line:
                line = line[os.write(fd, line):]
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise

    def clear(self) -> None:
        """After a commit that took every journaled reply: empty the file in place."""
        os.ftruncate(self._file.fileno(), 0)  # every line was flushed; appends restart at 0

    def close(self, *, committed: bool) -> None:
        """Close; remove the file when everything in it reached the store."""
        self._file.close()
        if committed:
            self.path.unlink(missing_ok=True)


@dataclass
class Replayed:
    """What replaying a journal did: ``kept`` writes the store lacked were inserted; the lines
    that were no reply's rows (``torn``: cut short, not JSON, not an object; ``unknown``: naming
    a table or column the store lacks; ``refused``: values the store would not take) skipped."""

    kept: int = 0
    torn: int = 0
    unknown: int = 0
    refused: int = 0

    @property
    def skipped(self) -> int:
        return self.torn + self.unknown + self.refused

    def notice(self, path: Path) -> str | None:
        """One line saying what was skipped; None when nothing was."""
        if not self.skipped:
            return None
        kinds = [f"{n} {what}" for n, what in ((self.torn, "torn or not a reply's rows"),
                 (self.unknown, "naming an unknown table or column"),
                 (self.refused, "with values the store refused")) if n]
        return (f"{path}: skipped {self.skipped} journal line{'s' if self.skipped != 1 else ''} "
                f"({', '.join(kinds)}); recovered {self.kept} repl{'ies' if self.kept != 1 else 'y'}")


def replay(store: Store) -> Replayed:
    """Insert the journaled writes the store lacks, in one transaction, then remove the journal.
    Only this user's own 0600 regular file is replayed (:func:`_read_own`); lines that are no
    reply's rows are skipped and counted."""
    path = journal_path(store.path)
    data = _read_own(path)
    if data is None:
        return Replayed()
    result = Replayed()
    writes = [write for write in _whole_writes(data, result) if _known(write, result)]
    missing = _missing(store.con, writes)
    result.kept = _insert(store, missing, result)
    path.unlink()
    return result


def _read_own(path: Path) -> bytes | None:
    """The journal's bytes; None when there is none. Anything but this user's own regular 0600
    file is refused in one line: another user could have planted it to forge answers and labels."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError:
        raise _refused(path) from None
    reason = stat_reason(os.fstat(fd))
    if reason is not None:
        os.close(fd)
        raise _refused(path, reason)
    with os.fdopen(fd, "rb") as file:
        return file.read()


def _refused(path: Path, reason: str | None = None) -> UserError:
    reason = reason or not_own_reason(path) or "it cannot be read"
    return UserError(f"{path}: reply journal not replayed ({reason}); only your own file with "
                     "mode 600 is replayed: look at what it holds, then remove it (or, if you "
                     "wrote it, chmod 600 it) and try again")


def _whole_writes(data: bytes, result: Replayed) -> Iterator[dict[str, list[dict[str, Any]]]]:
    for line in data.split(b"\n"):
        if not line:
            continue
        try:
            write = orjson.loads(line)
        except orjson.JSONDecodeError:  # cut short by a kill (never acknowledged whole), or junk
            write = None
        if _is_rows(write) and _good_key(reply_key(write)):
            yield write
        else:
            result.torn += 1


def _is_rows(write: Any) -> bool:
    """``{table: [row, ...]}`` with every row an object: the shape :meth:`Journal.append` writes."""
    return isinstance(write, dict) and all(
        isinstance(rows, list) and all(isinstance(row, dict) for row in rows)
        for rows in write.values())


_KEY_TYPES = {"run_id": (str,), "item_id": (str,), "model": (str,), "attempt": (int,),
              "variant": (str, type(None)), "samples": (list, type(None))}


def _good_key(key: Mapping[str, Any] | None) -> bool:
    """The ok attempt's identifying values have the types the store's columns hold."""
    return key is not None and all(isinstance(key.get(name), kinds)
                                   for name, kinds in _KEY_TYPES.items()) and \
        all(isinstance(n, int) for n in key.get("samples") or ())


def _known(write: Rows, result: Replayed) -> bool:
    """Every table and column the write names is the store's (counted in ``unknown`` if not)."""
    known = all(table in TABLE_COLUMNS and all(set(row) <= set(TABLE_COLUMNS[table])
                                               for row in rows)
                for table, rows in write.items())
    result.unknown += not known
    return known


def _insert(store: Store, writes: list[Rows], result: Replayed) -> int:
    """All the writes in one transaction; if the store refuses a value, each write on its own,
    so that one forged or damaged line costs only itself."""
    if not writes:
        return 0
    try:
        _insert_writes(store, writes)
        return len(writes)
    except duckdb.Error:
        kept = 0
        for write in writes:
            try:
                _insert_writes(store, [write])
                kept += 1
            except duckdb.Error:
                result.refused += 1
        return kept


def _insert_writes(store: Store, writes: list[Rows]) -> None:
    with store.transaction():
        for table, rows in merge_writes(writes).items():
            store.append(table, rows)


def _missing(con: duckdb.DuckDBPyConnection, writes: list[dict]) -> list[dict]:
    """The writes whose ok attempt is not in the store (one query for all of them)."""
    if not writes:  # killed just after a commit emptied the journal
        return []
    keys = [reply_key(write) for write in writes]
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
    return [write for n, write in enumerate(writes) if n not in done]


def merge_writes(writes: Iterable[Rows]) -> dict[str, list[Mapping[str, Any]]]:
    """Several writes' rows gathered per table, in order (one INSERT per table)."""
    merged: dict[str, list[Mapping[str, Any]]] = {}
    for rows in writes:
        for table, table_rows in rows.items():
            merged.setdefault(table, []).extend(table_rows)
    return merged
