"""A rater's queue: which cells are theirs, in what order, which one comes next, how far along
they are and at what pace. Kept in memory and brought up to date from what the store gained
since the last request (:mod:`contam.harness.view.follow`), so a request costs what changed.

The rules, each mirrored by a small function here that a test checks:

- A cell is queued once its latest answer is not blank (a blank answer counts as wrong without
  a label, as the report has it).
- Without ``--raters`` every rater gets every cell. With ``--raters a,b,...`` (k names) a cell
  belongs to rater number ``h1 mod k`` and, when ``h2 < overlap * 2**32``, also to the next rater
  in the list (the last one's go to the first); h1 and h2 are the first and second 8 hex digits
  of md5("ITEM\\x1fMODEL"). Nothing else enters the split: it is the same after every restart.
- A rater's cells come in ascending md5("SEED\\x1fITEM\\x1fMODEL") order, SEED being the seed of
  their first recorded session. A new answer falls into place without moving the others.
- The next cell is the first of the rater's cells without a standing label from them (a
  retracted label is none), passing over the ones skipped in this server's lifetime until only
  those are left.
"""

from __future__ import annotations

import bisect
import datetime as dt
import hashlib
import statistics
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from contam.harness.view.follow import Follower

__all__ = ["Share", "Progress", "EligibleCells", "RaterQueue", "share_hashes", "order_key", "pace",
           "BREAK_S"]

Key = tuple[str, str]  # (item_id, model)
BREAK_S = 300.0  # a gap between two labels longer than this is a break, not labelling time
_BULK = 2048  # more additions than this at once: append and sort instead of inserting one by one


def share_hashes(item_id: str, model: str) -> tuple[int, int]:
    digest = hashlib.md5(f"{item_id}\x1f{model}".encode()).hexdigest()
    return int(digest[:8], 16), int(digest[8:16], 16)


def order_key(seed: int, item_id: str, model: str) -> str:
    return hashlib.md5(f"{seed}\x1f{item_id}\x1f{model}".encode()).hexdigest()


@dataclass(frozen=True)
class Share:
    """Rater number ``index`` of ``count`` under ``--raters``, with ``--overlap``."""

    index: int
    count: int
    overlap: float = 0.0

    def holds(self, item_id: str, model: str) -> bool:
        h1, h2 = share_hashes(item_id, model)
        if h1 % self.count == self.index:
            return True
        return h2 < int(self.overlap * 2**32) and (h1 + 1) % self.count == self.index


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    seconds_per_label: float | None = None  # pace(): None before two labels in a row

    @property
    def seconds_left(self) -> float | None:
        if self.seconds_per_label is None:
            return None
        return (self.total - self.done) * self.seconds_per_label


def pace(times: Iterable[dt.datetime]) -> float | None:
    """Seconds a label, the median of the gaps between consecutive ones, leaving out the gaps
    longer than BREAK_S (a break, a night: the time left counts working time); None before two
    labels in a row."""
    times = list(times)
    gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
    working = [gap for gap in gaps if 0 < gap <= BREAK_S]
    return statistics.median(working) if working else None


class EligibleCells:
    """The cells whose latest answer is not blank, followed from the answers table. ``log``
    lists every change, (key, eligible now), since ``epoch`` began; a rebuilt index is a new
    epoch whose log starts with every eligible cell."""

    def __init__(self) -> None:
        self._answers = Follower("answers", "item_id, model, coalesce(trim(answer), '') = ''")
        self._latest: dict[Key, tuple[int, bool]] = {}  # key -> (seq, blank) of its latest answer
        self.epoch = 0
        self.log: list[tuple[Key, bool]] = []

    def refresh(self, store: Any) -> None:
        delta = self._answers.fetch(store)
        if delta.reset:
            self._latest, self.log, self.epoch = {}, [], self.epoch + 1
        for seq, item_id, model, blank in delta.rows:
            key = (item_id, model)
            was = key in self._latest and not self._latest[key][1]
            self._latest[key] = (seq, blank)
            if was == blank:  # eligible before and blank now, or the other way round
                self.log.append((key, not blank))

    def answer_seq(self, key: Key) -> int | None:
        """The ``seq`` of the cell's latest answer (so that it is read by that alone)."""
        latest = self._latest.get(key)
        return latest[0] if latest else None


class RaterQueue:
    """One rater's cells in their order, and which of them they have labelled."""

    def __init__(self, rater: str, seed: int, share: Share | None) -> None:
        self.rater, self.seed, self.share = rater, seed, share
        self._labels = Follower("labels", "item_id, model, label, coalesce(retracted, false), "
                                "created_at", "rater = $rater", {"rater": rater})
        self._order: list[tuple[str, str, str]] = []  # (rank, item_id, model), sorted
        self._rank: dict[Key, str] = {}
        self._standing: dict[Key, tuple[int, str]] = {}  # key -> (seq, label)
        self._times: deque = deque(maxlen=21)
        self._epoch, self._read, self._hint = -1, 0, 0  # every cell before _hint is labelled
        self._done = 0  # cells of the queue with a standing label

    def refresh(self, store: Any, cells: EligibleCells) -> None:
        self._follow_cells(cells)
        self._follow_labels(store)

    def next(self, skipped: set[Key]) -> Key | None:
        """The first unlabelled cell not skipped; the first skipped one when only those are left."""
        while self._hint < len(self._order) and self._key(self._hint) in self._standing:
            self._hint += 1
        first_skipped = None
        for position in range(self._hint, len(self._order)):
            key = self._key(position)
            if key in self._standing:
                continue
            if key not in skipped:
                return key
            first_skipped = first_skipped or key
        return first_skipped

    def progress(self) -> Progress:
        return Progress(self._done, len(self._order), pace(self._times))

    def last_label(self) -> tuple[Key, str] | None:
        """The rater's most recent label still standing (what an undo takes back)."""
        if not self._standing:
            return None
        key, (_seq, label) = max(self._standing.items(), key=lambda kv: kv[1][0])
        return key, label

    def _key(self, position: int) -> Key:
        return self._order[position][1], self._order[position][2]

    def _follow_cells(self, cells: EligibleCells) -> None:
        if cells.epoch != self._epoch:
            self._order, self._rank, self._hint, self._done = [], {}, 0, 0
            self._epoch, self._read = cells.epoch, 0
        changes, self._read = dict(cells.log[self._read:]), len(cells.log)  # a key's last change
        for key, eligible in changes.items():
            if not eligible:
                self._remove(key)
        self._add([key for key, eligible in changes.items() if eligible and self._takes(key)])

    def _takes(self, key: Key) -> bool:
        return self.share is None or self.share.holds(*key)

    def _add(self, keys: list[Key]) -> None:
        entries = [(order_key(self.seed, *key), *key) for key in keys if key not in self._rank]
        self._rank.update({(item, model): rank for rank, item, model in entries})
        self._done += sum(1 for _rank, *key in entries if tuple(key) in self._standing)
        if len(entries) > _BULK:
            self._order.extend(entries)
            self._order.sort()
            self._hint = 0
            return
        for entry in entries:
            position = bisect.bisect(self._order, entry)
            self._order.insert(position, entry)
            self._hint = min(self._hint, position)

    def _remove(self, key: Key) -> None:
        rank = self._rank.pop(key, None)
        if rank is not None:
            self._done -= key in self._standing
            position = bisect.bisect_left(self._order, (rank, *key))
            self._order.pop(position)
            self._hint = min(self._hint, position)

    def _follow_labels(self, store: Any) -> None:
        delta = self._labels.fetch(store)
        if delta.reset:
            self._standing, self._hint, self._done = {}, 0, 0
            self._times.clear()
        for seq, item_id, model, label, retracted, created_at in delta.rows:
            key = (item_id, model)
            counted = key in self._standing and key in self._rank
            if retracted:
                self._standing.pop(key, None)
                self._hint = 0  # the cell may sit anywhere before the hint
            else:
                self._standing[key] = (seq, label)
                self._times.append(created_at)
            self._done += (key in self._standing and key in self._rank) - counted
