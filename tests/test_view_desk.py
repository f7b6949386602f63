"""The label and adjudicate desks' words: the progress line when finished,
the adjudicator's pace, a break left out of the time left, and where a finished desk leads."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from contam.harness.store import Store
from contam.harness.view.present import progress_text
from contam.harness.view.queue import BREAK_S, Progress, pace
from tests.viewkit import MODELS, build_view_store, view_client


@pytest.fixture
def path(tmp_path):
    return build_view_store(tmp_path / "desk.duckdb", items=3)


def test_a_finished_desk_says_all_done_not_zero_seconds_left():
    assert progress_text(Progress(52, 52, 3.0)) == "52 / 52 · all done"
    assert progress_text(Progress(50, 52, 3.0)) == "50 / 52 · 20.0 a minute · about 6 s left"


def test_a_break_is_left_out_of_the_pace():
    start = dt.datetime(2026, 1, 1, 9)
    times = [start, start + dt.timedelta(seconds=10),
             start + dt.timedelta(seconds=10 + BREAK_S + 3600),  # lunch
             start + dt.timedelta(seconds=20 + BREAK_S + 3600)]
    assert pace(times) == 10.0
    assert pace(times[1:3]) is None  # a break alone says nothing of the pace


def _disagree(path) -> None:
    """ann and bo disagree on every cell."""
    with Store(path) as store:
        store.append("labels", [{"item_id": f"it{n:03d}", "model": model, "rater": rater,
                                 "label": label} for n in range(3) for model in MODELS
                                for rater, label in (("human:ann", "right"), ("human:bo", "wrong"))])


def test_adjudication_shows_a_pace_and_finishes_with_links_onwards(path):
    _disagree(path)
    client = view_client(path)
    page = client.get("/adjudicate").text
    for n in range(6):
        cell = re.search(r'data-cell="([0-9a-f]*)"', page)[1] if n == 0 else reply["cell"]["id"]
        reply = client.post("/api/adjudicate/label", json={"cell": cell, "label": "partial"}).json()
        if n == 2:
            assert re.fullmatch(r"3 / 6 · [\d,.]+ a minute · about \d+ s left", reply["progress"]["text"])
    assert reply["cell"] is None and reply["progress"]["text"] == "6 / 6 · all done"
    done = client.get("/adjudicate").text
    assert 'href="/report?human=human:adjudicated"' in done and 'href="/agree"' in done
    for action in ("undo", "skip", "note"):
        assert re.search(rf'data-action="{action}" data-while-cell hidden', done), action


@pytest.mark.parametrize("options, links", [
    ({"unblind": True}, ['href="/agree"', 'href="/adjudicate"', 'href="/"']),
    ({}, ['href="/label"']),  # blind: nothing that names a model
])
def test_a_finished_label_desk_links_onwards_and_hides_undo_skip_and_note(path, options, links):
    client = view_client(path, **options)
    page = client.get("/label?rater=ann").text
    assert re.search(r'data-action="undo" data-while-cell>', page)  # shown while there is a cell
    cell = re.search(r'data-cell="([0-9a-f]*)"', page)[1]
    for _ in range(6):
        cell = client.post("/api/label/label", json={"rater": "ann", "cell": cell,
                                                     "label": "right"}).json()["cell"] or {}
        cell = cell.get("id")
    done = client.get("/label?rater=ann").text
    section = re.search(r'<section id="done-msg".*?</section>', done, re.S)[0]
    assert "hidden" not in section.split(">", 1)[0] and all(link in section for link in links)
    for action in ("undo", "skip", "note"):
        assert re.search(rf'data-action="{action}" data-while-cell hidden', done), action
    assert "6 / 6 · all done" in done
