"""A rater's queue (contam.harness.view.queue): the split among raters, the per-rater order, resume at the
first unlabelled cell, retractions, skips, blank answers, new answers arriving, and the follower
that reads only what the store gained."""

from __future__ import annotations

import hashlib

import pytest

from contam.harness.store import Store, utc_now
from contam.harness.store.access import reading
from contam.harness.view.follow import Follower
from contam.harness.view.queue import EligibleCells, RaterQueue, Share, order_key, share_hashes
from tests.viewkit import MODELS, build_view_store

KEYS = [(f"item{n}", model) for n in range(600) for model in ("m1", "m2")]


def test_the_split_hashes_are_md5_of_item_and_model():
    digest = hashlib.md5("it001\x1fzorblax-7b".encode()).hexdigest()
    assert share_hashes("it001", "zorblax-7b") == (int(digest[:8], 16), int(digest[8:16], 16))
    assert order_key(42, "it001", "m") == hashlib.md5(b"42\x1fit001\x1fm").hexdigest()


def test_without_overlap_every_cell_belongs_to_exactly_one_rater():
    shares = [Share(i, 3) for i in range(3)]
    owners = [[s.index for s in shares if s.holds(*key)] for key in KEYS]
    assert all(len(o) == 1 for o in owners)
    counts = [sum(o == [i] for o in owners) for i in range(3)]
    assert all(330 < c < 470 for c in counts), counts  # about a third each


def test_overlap_gives_that_fraction_to_the_next_rater_too():
    shares = [Share(i, 2, overlap=0.3) for i in range(2)]
    both = sum(all(s.holds(*key) for s in shares) for key in KEYS)
    assert all(any(s.holds(*key) for s in shares) for key in KEYS)
    assert 0.24 < both / len(KEYS) < 0.36, both


def _queue_on(path, rater="human:a", seed=7, share=None):
    cells, queue = EligibleCells(), RaterQueue(rater, seed, share)
    with reading(path) as store:
        cells.refresh(store)
        queue.refresh(store, cells)
    return cells, queue


def _refresh(path, cells, queue):
    with reading(path) as store:
        cells.refresh(store)
        queue.refresh(store, cells)


def _label(path, key, rater="human:a", label="right", **extra):
    with Store(path) as store:
        store.append("labels", [{"item_id": key[0], "model": key[1], "rater": rater, "label": label,
                                 "created_at": utc_now(), **extra}])


def test_cells_come_in_the_seeds_order_and_resume_at_the_first_unlabelled(tmp_path):
    path = build_view_store(tmp_path / "s.duckdb", items=10)
    cells, queue = _queue_on(path)
    expected = sorted(((f"it{n:03d}", m) for n in range(10) for m in MODELS),
                      key=lambda k: order_key(7, *k))
    assert queue.next(set()) == expected[0]
    for key in expected[:5]:
        _label(path, key)
    _refresh(path, cells, queue)
    assert queue.next(set()) == expected[5]
    assert (queue.progress().done, queue.progress().total) == (5, 20)
    _, fresh = _queue_on(path)  # a restarted server rebuilds the same state from the store
    assert fresh.next(set()) == expected[5] and fresh.progress().done == 5


def test_a_retracted_label_brings_its_cell_back(tmp_path):
    path = build_view_store(tmp_path / "s.duckdb", items=5)
    cells, queue = _queue_on(path)
    first = queue.next(set())
    _label(path, first)
    _refresh(path, cells, queue)
    assert queue.next(set()) != first and queue.last_label() == (first, "right")
    _label(path, first, retracted=True)
    _refresh(path, cells, queue)
    assert queue.next(set()) == first and queue.progress().done == 0 and queue.last_label() is None


def test_skipped_cells_wait_until_only_they_are_left(tmp_path):
    path = build_view_store(tmp_path / "s.duckdb", items=2)
    cells, queue = _queue_on(path)
    order = sorted(((f"it{n:03d}", m) for n in range(2) for m in MODELS), key=lambda k: order_key(7, *k))
    assert queue.next({order[0]}) == order[1]
    for key in order[1:]:
        _label(path, key)
    _refresh(path, cells, queue)
    assert queue.next({order[0]}) == order[0]


def test_blank_answers_are_not_queued_and_new_answers_fall_into_place(tmp_path):
    path = build_view_store(tmp_path / "s.duckdb", items=6, blank_item=2)
    cells, queue = _queue_on(path)
    assert queue.progress().total == 10  # 6 items x 2 models, item 2's two blank answers left out
    with Store(path) as store:
        store.append("items", [{"item_id": "late", "title": "T", "subset": "s", "question": "q",
                                "reference": "r"}])
        store.append("answers", [{"item_id": "late", "model": MODELS[0], "answer": "a",
                                  "answer_raw": "a"},
                                 {"item_id": "it002", "model": MODELS[1], "answer": "now said",
                                  "answer_raw": "now said"}])
    _refresh(path, cells, queue)
    assert queue.progress().total == 12  # the late item's answer and it002's new one
    expected = sorted([k for k in ((f"it{n:03d}", m) for n in range(6) for m in MODELS)
                       if k != ("it002", MODELS[0])] + [("late", MODELS[0])],
                      key=lambda k: order_key(7, *k))
    assert queue.next(set()) == expected[0]


def test_a_rater_sees_only_their_share(tmp_path):
    path = build_view_store(tmp_path / "s.duckdb", items=20)
    share = Share(1, 2, overlap=0.5)
    _, queue = _queue_on(path, share=share)
    mine = [(f"it{n:03d}", m) for n in range(20) for m in MODELS if share.holds(f"it{n:03d}", m)]
    assert queue.progress().total == len(mine)
    assert queue.next(set()) == min(mine, key=lambda k: order_key(7, *k))


def test_the_follower_reads_only_new_rows_and_starts_over_when_counts_disagree(tmp_path):
    path = build_view_store(tmp_path / "s.duckdb", items=3)
    follower = Follower("answers", "item_id")
    with reading(path) as store:
        first = follower.fetch(store)
        assert first.reset and len(first.rows) == 6
        assert follower.fetch(store).rows == []
    with Store(path) as store:
        store.append("answers", [{"item_id": "it000", "model": "x", "answer": "y"}])
    with reading(path) as store:
        delta = follower.fetch(store)
    assert not delta.reset and [r[1] for r in delta.rows] == ["it000"]
    follower.count -= 1  # as if a row below the last seq seen had been committed late
    with Store(path) as store:
        store.append("answers", [{"item_id": "it001", "model": "x", "answer": "y"}])
    with reading(path) as store:
        again = follower.fetch(store)
    assert again.reset and len(again.rows) == 8


@pytest.mark.parametrize("overlap", [0.0, 0.25])
def test_shares_cover_every_cell_whatever_the_number_of_raters(overlap):
    for count in (2, 3, 5):
        shares = [Share(i, count, overlap) for i in range(count)]
        assert all(any(s.holds(*key) for s in shares) for key in KEYS[:200])


def test_a_re_answered_cell_is_queued_once_and_only_while_its_latest_answer_is_not_blank(tmp_path):
    path = build_view_store(tmp_path / "s.duckdb", items=2)
    cells, queue = _queue_on(path)  # 4 cells queued; then, within one refresh:
    gone, back = ("it000", MODELS[0]), ("it001", MODELS[0])

    def answer(key, text):
        return {"item_id": key[0], "model": key[1], "answer": text, "answer_raw": text}

    with Store(path) as store:  # gone: blank; back: blank, then answered again
        store.append("answers", [answer(gone, ""), answer(back, ""), answer(back, "again")])
    _refresh(path, cells, queue)
    _, fresh = _queue_on(path)  # and a restarted server, which replays every answer at once
    for q in (queue, fresh):
        assert q.progress().total == 3  # was 5 (gone queued, back twice)
        shown: list = []
        while (key := q.next(set(shown))) not in shown and key is not None:
            shown.append(key)
        assert sorted(shown) == sorted({("it000", MODELS[1]), back, ("it001", MODELS[1])})
