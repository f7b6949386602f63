"""`contam score` with BLEU-2: what gets scored, what is skipped, what is NULL or flagged."""

from __future__ import annotations

import json

import pytest

from contam.harness.errors import UserError
from contam.harness.jobs.score import score_store
from contam.harness.store import Store, utc_now
from contam.metrics.bleu import BLEU2_PARAMS, bleu2

ITEMS = [("i1", "Flash."), ("i2", "The Pokédex."), ("i3", "TM34, Bide."), ("i4", ""),
         ("i5", "Pewter City")]
ANSWERS = [("i1", "a", "Flash"), ("i1", "b", "HM05 Flash."), ("i2", "a", "The Pokédex"),
           ("i2", "b", "   "), ("i3", "a", "Brock gives TM34 (Bide)."), ("i3", "b", ""),
           ("i4", "a", "Cerulean City"), ("i4", "b", ""), ("i5", "a", "I don't know"),
           ("i5", "b", "Pewter City gym")]


def add_items(store: Store, items=ITEMS) -> None:
    store.append("items", [{"item_id": i, "title": "Red", "subset": "official", "question": "q?",
                            "reference": r, "added_at": utc_now()} for i, r in items])


def add_answers(store: Store, answers=ANSWERS) -> None:
    store.append("answers", [{"item_id": i, "model": m, "answer_raw": a, "answer": a,
                              "created_at": utc_now()} for i, m, a in answers])


@pytest.fixture
def filled(store_path):
    with Store(store_path, create=True) as store:
        add_items(store)
        add_answers(store)
    return store_path


def cells(store_path) -> dict[tuple[str, str], dict]:
    with Store(store_path, read_only=True) as store:
        return {(c["item_id"], c["model"]): c for c in store.query_dicts("SELECT * FROM cells")}


def test_score_writes_bleu2_for_every_cell(filled, contam):
    status, out, err = contam("score", "--store", filled, "--metric", "bleu2", "--no-progress")
    assert status == 0, err
    # blanks: i2/b, i3/b, i4/b; flagged: i4/a (empty reference, non-empty answer)
    assert out.strip() == "bleu2: 10 scored (4 NULL, 1 flagged (empty reference)), " \
                          "0 already scored with the same params"
    table = cells(filled)
    for item, model, answer in ANSWERS:
        reference = dict(ITEMS)[item]
        expected = bleu2(answer, reference)
        assert table[item, model]["bleu2"] == expected
    assert table["i3", "a"]["bleu2"] > 0 and table["i1", "a"]["bleu2"] == 0.0
    assert table["i4", "a"]["bleu2"] is None and table["i4", "a"]["reference_empty"]
    assert table["i2", "b"]["bleu2"] is None and table["i3", "b"]["bleu2"] is None


def test_params_are_recorded_as_json(filled):
    with Store(filled) as store:
        score_store(store, ["bleu2"])
        params = {p for (p,) in store.query("SELECT DISTINCT params FROM scores")}
    assert [json.loads(p) for p in params] == [BLEU2_PARAMS]


def test_a_second_pass_scores_nothing_new(filled, contam):
    contam("score", "--store", filled, "--metric", "bleu2")
    status, out, _ = contam("score", "--store", filled, "--metric", "bleu2")
    assert status == 0
    assert out.strip() == "bleu2: 0 scored (0 NULL), 10 already scored with the same params"
    with Store(filled, read_only=True) as store:
        assert store.count("scores") == 10


def test_a_newer_answer_or_reference_is_scored_again(filled):
    with Store(filled) as store:
        score_store(store, ["bleu2"])
        add_answers(store, [("i1", "a", "Flash!  HM05")])
        add_items(store, [("i5", "Pewter City Gym")])
        summary, = score_store(store, ["bleu2"])
    assert (summary.scored, summary.skipped) == (3, 7)  # i1/a, i5/a, i5/b
    table = cells(filled)
    assert table["i1", "a"]["bleu2"] == bleu2("Flash!  HM05", "Flash.")
    assert table["i5", "b"]["bleu2"] == bleu2("Pewter City gym", "Pewter City Gym") == 1.0


def test_other_params_are_scored_again(filled):
    with Store(filled) as store:
        store.append("scores", [{"item_id": i, "model": m, "metric": "bleu2", "value": 0.5,
                                 "params": json.dumps({"version": 0})} for i, m, _ in ANSWERS])
        summary, = score_store(store, ["bleu2"])
        assert summary.scored == 10
        assert store.count("scores") == 20  # appended, nothing overwritten


def test_bleu2_nltk_is_a_metric_of_its_own(filled):
    with Store(filled) as store:
        ours, nltk = score_store(store, ["bleu2", "bleu2_nltk"])
        values = dict(((i, m), v) for i, m, v in store.query(
            "SELECT item_id, model, value FROM latest_scores WHERE metric = 'bleu2_nltk'"))
        params = json.loads(store.query(
            "SELECT params FROM scores WHERE metric = 'bleu2_nltk' LIMIT 1")[0][0])
    assert ours.scored == nltk.scored == 10
    # "Flash" vs "Flash.": NLTK returns the brevity penalty for one token (1.0), ours 0.0
    assert values["i1", "a"] == 1.0 and cells(filled)["i1", "a"]["bleu2"] == 0.0
    assert params["implementation"].startswith("nltk")


def test_contradictory_baseline_options_are_refused(filled, contam):
    status, out, err = contam("score", "--store", filled, "--no-rescale", "--baseline", "x.tsv")
    assert status == 2 and "contradict" in err and "Traceback" not in err
    with Store(filled, read_only=True) as store:
        assert store.count("scores") == 0


def test_unknown_metric_from_python_is_a_user_error(filled):
    with Store(filled) as store, pytest.raises(UserError, match="unknown metric"):
        score_store(store, ["rouge"])
