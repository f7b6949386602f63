"""The two labelling desks behind the keyboard pages: a rater's (``/label``) and the
adjudicator's (``/adjudicate``). Each action writes its row through the gate, committed, before
the desk answers with the next screen; nothing is kept that the store does not also hold, except
the cells skipped in this server's lifetime and the adjudicator's undo stack.

Pages name a cell by an opaque id (an HMAC of its key under a secret of this process), never by
item or model: a blind page must not carry the model's name, not even in an attribute.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections import deque
from dataclasses import dataclass
from typing import Any

from contam.harness.declare import flag_of
from contam.harness.errors import UserError
from contam.harness.labels import LABEL_NAMES
from contam.harness.store.raters import ADJUDICATOR
from contam.harness.store.store import utc_now
from contam.harness.view.agreement import agreed_rows, disagreements, rater_labels
from contam.harness.view.cells import cell_content, cell_extras
from contam.harness.view.gate import StoreGate
from contam.harness.view.options import ViewOptions
from contam.harness.view.queue import EligibleCells, Key, Progress, RaterQueue, Share, pace

__all__ = ["LabelDesk", "AdjudicationDesk", "Screen", "CellIds", "LABEL_NAMES", "StaleCell", "NotYours",
           "label_row"]

MAX_NOTE = 2000


class StaleCell(UserError):
    """A page named a cell this server never showed (it was restarted since): reload."""


class NotYours(UserError):
    """A rater asked to write what is not theirs: a cell of another rater's share, or a label
    under a name that is not one of this study's raters (answered 403)."""


@dataclass(frozen=True)
class Screen:
    """What a labelling page shows: one cell (None when none is left), progress, and what the
    last action did."""

    rater: str
    cell: dict[str, Any] | None
    progress: Progress
    said: str = ""


class CellIds:
    """Opaque, unguessable cell ids, valid for the life of this process."""

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(16)
        self._keys: dict[str, Key] = {}

    def id_for(self, key: Key) -> str:
        digest = hmac.new(self._secret, "\x1f".join(key).encode(), hashlib.sha256).hexdigest()[:24]
        self._keys[digest] = key
        return digest

    def key(self, cell_id: str) -> Key:
        if cell_id not in self._keys:
            raise StaleCell("this page is older than the server (it was restarted): reload it")
        return self._keys[cell_id]


def label_row(key: Key, rater: str, label: str, session: str, *, note: str | None = None,
               retracted: bool = False) -> dict[str, Any]:
    if label not in LABEL_NAMES:
        raise UserError(f"label {label!r}: one of {', '.join(LABEL_NAMES)}")
    if note is not None and not isinstance(note, str):
        raise UserError("a note is text")
    if note is not None and len(note) > MAX_NOTE:
        raise UserError(f"a note of at most {MAX_NOTE} characters")
    return {"item_id": key[0], "model": key[1], "rater": rater, "label": label,
            "note": (note or "").strip() or None, "retracted": retracted or None,
            "run_id": session}  # created_at: stamped by the append


class _Desk:
    def __init__(self, gate: StoreGate, options: ViewOptions, ids: CellIds) -> None:
        self.gate, self.options, self.ids = gate, options, ids

    def _card(self, store: Any, key: Key, answer_seq: int | None = None) -> dict[str, Any] | None:
        """The cell as a page shows it: texts always; model, subset and scores only unblinded."""
        content = cell_content(store, *key, answer_seq)
        if content is None:
            return None
        card = {"id": self.ids.id_for(key), "title": content["title"],
                "question": content["question"], "reference": content["reference"],
                "answer": content["answer_raw"] if content["answer_raw"] is not None
                else content["answer"]}
        if not self.options.blind:
            card.update(item_id=content["item_id"], model=content["model"],
                        subset=content["subset"], **cell_extras(store, *key))
        return card


class LabelDesk(_Desk):
    """Every rater's queue, one server for all of them."""

    def __init__(self, gate: StoreGate, options: ViewOptions, ids: CellIds) -> None:
        super().__init__(gate, options, ids)
        self._cells = EligibleCells()
        self._queues: dict[str, RaterQueue] = {}
        self._sessions: dict[str, str] = {}
        self._skipped: dict[str, set[Key]] = {}

    def screen(self, rater: str, show: Key | None = None, said: str = "") -> Screen:
        with self.gate.lock:
            queue = self._queue(rater)
            with self.gate.reading() as store:
                self._cells.refresh(store)
                queue.refresh(store, self._cells)
                card = self._card(store, show) if show else None
                if card is None:
                    key = queue.next(self._skipped[rater])
                    card = self._card(store, key, self._cells.answer_seq(key)) if key else None
                return Screen(rater, card, queue.progress(), said)

    def label(self, rater: str, cell_id: str, label: str, note: str | None = None) -> Screen:
        with self.gate.lock:
            key = self._own_key(rater, cell_id)
            self.gate.append_labels([label_row(key, rater, label, self._sessions[rater], note=note)])
            self._skipped[rater].discard(key)
            return self.screen(rater, said=f"Saved: {LABEL_NAMES[label]}")

    def skip(self, rater: str, cell_id: str) -> Screen:
        with self.gate.lock:
            key = self._own_key(rater, cell_id)  # first: it opens the rater's desk if need be
            self._skipped[rater].add(key)
            return self.screen(rater, said="Skipped: it comes back when the rest are done")

    def undo(self, rater: str) -> Screen:
        """Take back the rater's latest standing label (a retraction row) and show its cell."""
        with self.gate.lock:
            queue = self._queue(rater)
            with self.gate.reading() as store:
                self._cells.refresh(store)
                queue.refresh(store, self._cells)
            last = queue.last_label()
            if last is None:
                return self.screen(rater, said="Nothing to undo")
            key, label = last
            self.gate.append_labels([label_row(key, rater, label, self._sessions[rater],
                                                retracted=True)])
            return self.screen(rater, show=key, said=f"Undone: {LABEL_NAMES[label]}")

    def _own_key(self, rater: str, cell_id: str) -> Key:
        """The cell's key, if the cell is one of ``rater``'s (under --raters, their share)."""
        key = self.ids.key(cell_id)
        share = self._queue(rater).share
        if share is not None and not share.holds(*key):
            raise NotYours(f"that cell is not one of {rater}'s ({flag_of(ViewOptions, 'raters')} "
                           "splits the cells)")
        return key

    def _queue(self, rater: str) -> RaterQueue:
        """The rater's queue; their first visit to this server records a session (and their
        first visit ever, the seed that orders their cells)."""
        if rater not in self._queues:
            share = self._share(rater)
            seed = self._recorded_seed(rater)
            session = f"view:{secrets.token_hex(4)}"
            self.gate.append_label_sessions([{
                "session_id": session, "rater": rater, "seed": seed, "blind": self.options.blind,
                "overlap": self.options.overlap, "raters": json.dumps(list(self.options.raters))}])
            self._queues[rater] = RaterQueue(rater, seed, share)
            self._sessions[rater], self._skipped[rater] = session, set()
        return self._queues[rater]

    def _share(self, rater: str) -> Share | None:
        raters = self.options.raters
        if not raters:
            return None
        if rater not in raters:
            raise NotYours(f"{rater} is not one of this study's raters ({', '.join(raters)})")
        return Share(raters.index(rater), len(raters), self.options.overlap)

    def _recorded_seed(self, rater: str) -> int:
        with self.gate.reading() as store:
            rows = store.query("SELECT seed FROM label_sessions WHERE rater = $rater ORDER BY seq "
                               "LIMIT 1", {"rater": rater})
        if rows:
            return rows[0][0]
        return self.options.seed if self.options.seed is not None else secrets.randbelow(2**31)


class AdjudicationDesk(_Desk):
    """The disagreement queue; decisions are stored as rater ``human:adjudicated``."""

    def __init__(self, gate: StoreGate, options: ViewOptions, ids: CellIds) -> None:
        super().__init__(gate, options, ids)
        self._session = f"view:{secrets.token_hex(4)}"
        self._skipped: set[Key] = set()
        self._settled: list[tuple[Key, str]] = []  # this server's decisions, for undo
        self._times: deque = deque(maxlen=21)  # when the latest of them were made, for the pace

    def screen(self, show: Key | None = None, said: str = "") -> Screen:
        with self.gate.lock, self.gate.reading() as store:
            queue = disagreements(store)
            key = show or next((k for k in queue if k not in self._skipped), None) or \
                next(iter(queue), None)
            card = self._card(store, key) if key else None
            if card is not None:
                card["raters"] = rater_labels(store, *key)
            done = len(self._settled)
            return Screen(ADJUDICATOR, card, Progress(done, done + len(queue), pace(self._times)),
                          said)

    def label(self, cell_id: str, label: str, note: str | None = None) -> Screen:
        with self.gate.lock:
            key = self.ids.key(cell_id)
            self.gate.append_labels([label_row(key, ADJUDICATOR, label, self._session, note=note)])
            self._settled.append((key, label))
            self._times.append(utc_now())
            self._skipped.discard(key)
            return self.screen(said=f"Settled: {LABEL_NAMES[label]}")

    def skip(self, cell_id: str) -> Screen:
        with self.gate.lock:
            self._skipped.add(self.ids.key(cell_id))
            return self.screen(said="Skipped")

    def undo(self) -> Screen:
        with self.gate.lock:
            if not self._settled:
                return self.screen(said="Nothing to undo")
            key, label = self._settled.pop()
            self.gate.append_labels([label_row(key, ADJUDICATOR, label, self._session,
                                                retracted=True)])
            return self.screen(show=key, said=f"Undone: {LABEL_NAMES[label]}")

    def settle_agreed(self) -> int:
        """Write the raters' common label as the adjudicated one wherever they all agree."""
        with self.gate.lock:
            with self.gate.reading() as store:
                agreed = agreed_rows(store)
            rows = [label_row((r["item_id"], r["model"]), ADJUDICATOR, r["label"], self._session,
                               note=f"agreed: {r['raters']}") for r in agreed]
            return self.gate.append_labels(rows) if rows else 0
