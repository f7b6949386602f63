"""Migration 5: an undone label is a newer ``retracted`` row, and every reader of labels agrees that
the key then has no label (the ``cells`` view, the report, ``contam import labels``, the judge's
pending cells). A label given again after a retraction counts again."""

from __future__ import annotations

import duckdb
import pytest

from contam.harness.store import MIGRATIONS, Store, utc_now
from contam.harness.store.cells import unjudged
from tests.test_store import old_store

ITEMS = [("i1", "Red", "official"), ("i2", "Red", "official"), ("i3", "Prism", "fan"),
         ("i4", "Prism", "fan")]


def _new(path) -> Store:
    """A new, migrated store."""
    return Store(path, create=True)


def _fill(store: Store) -> None:
    store.append("items", [{"item_id": i, "title": t, "subset": s, "question": f"q {i}",
                            "reference": f"ref {i}"} for i, t, s in ITEMS])
    store.append("answers", [{"item_id": i, "model": "m", "answer_raw": f"a {i}",
                              "answer": f"a {i}", "created_at": utc_now()} for i, _, _ in ITEMS])
    store.append("labels", [{"item_id": i, "model": "m", "rater": "human", "label": "right",
                             "created_at": utc_now()} for i, _, _ in ITEMS])


def _retract(store: Store, item: str, rater: str = "human", label: str = "right") -> None:
    store.append("labels", [{"item_id": item, "model": "m", "rater": rater, "label": label,
                             "retracted": True, "created_at": utc_now()}])


def test_a_retracted_label_leaves_its_key_without_a_label(store_path):
    with _new(store_path) as store:
        _fill(store)
        _retract(store, "i1")
        labelled = {r[0] for r in store.query("SELECT item_id FROM latest_labels")}
        assert labelled == {"i2", "i3", "i4"}
        cells = dict(store.query("SELECT item_id, human_label FROM cells"))
        assert cells["i1"] is None and cells["i2"] == "right"
        assert store.count("labels") == 5  # nothing deleted: the retraction is a fifth row


def test_the_cells_view_falls_back_to_another_human_rater(store_path):
    with _new(store_path) as store:
        _fill(store)
        store.append("labels", [{"item_id": "i1", "model": "m", "rater": "human:bob",
                                 "label": "wrong"}])
        _retract(store, "i1")
        assert store.query("SELECT human_label FROM cells WHERE item_id = 'i1'") == [("wrong",)]


def test_a_label_given_again_after_its_retraction_counts(store_path):
    with _new(store_path) as store:
        _fill(store)
        _retract(store, "i1")
        store.append("labels", [{"item_id": "i1", "model": "m", "rater": "human",
                                 "label": "partial", "note": "half of it"}])
        row = store.query_dicts("SELECT label, note FROM latest_labels WHERE item_id = 'i1'")
        assert row == [{"label": "partial", "note": "half of it"}]


def test_the_report_leaves_a_retracted_cell_out_as_unlabelled(store_path):
    from contam.harness.report.analysis import build_report

    with _new(store_path) as store:
        _fill(store)
        before = build_report(store)
        _retract(store, "i1")
        after = build_report(store)
    assert (before.overall[0]["n"], after.overall[0]["n"]) == (4, 3)
    assert (before.missing[0]["unlabelled_human"], after.missing[0]["unlabelled_human"]) == (0, 1)


def test_reimporting_a_retracted_label_appends_it_again(store_path, tmp_path, contam):
    with _new(store_path) as store:
        _fill(store)
    labels = tmp_path / "labels.csv"
    labels.write_text("item_id,model,rater,label\ni1,m,human,Right\n")
    assert contam("import", "labels", labels, "--store", store_path)[0] == 0
    with Store(store_path) as store:
        assert store.count("labels") == 4  # the same label as the latest: nothing new
        _retract(store, "i1")
    assert contam("import", "labels", labels, "--store", store_path)[0] == 0
    with Store(store_path) as store:
        assert store.count("labels") == 6
        assert store.query("SELECT label FROM latest_labels WHERE item_id = 'i1'") == [("right",)]


def test_a_retracted_judge_label_makes_its_cell_pending_for_the_judge(store_path):
    with _new(store_path) as store:
        _fill(store)
        store.append("labels", [{"item_id": i, "model": "m", "rater": "judge:j", "label": "wrong",
                                 "rubric_sha256": "r1"} for i, _, _ in ITEMS])
        assert unjudged(store, "judge:j", "r1") == []
        _retract(store, "i3", rater="judge:j", label="wrong")
        assert [row[0] for row in unjudged(store, "judge:j", "r1")] == ["i3"]


def test_a_store_from_before_migration_5_gets_it_and_keeps_its_labels(store_path):
    """A store made by the previous release (every migration but 5) is migrated on open."""
    old_store(store_path, {v for v, _, _ in MIGRATIONS if v != 5})
    with duckdb.connect(str(store_path)) as con:
        con.execute("INSERT INTO labels (item_id, model, rater, label) VALUES ('i1', 'm', 'human', 'wrong')")
    with Store(store_path) as store:
        assert 5 in {r[0] for r in store.query("SELECT version FROM _migrations")}
        assert store.query("SELECT label, note FROM latest_labels") == [("wrong", None)]
        assert store.count("label_sessions") == 0


@pytest.mark.parametrize("column", ["retracted", "rn"])
def test_latest_labels_exposes_neither_the_flag_nor_the_row_number(store_path, column):
    with _new(store_path) as store:
        names = [d[0] for d in store.con.execute("SELECT * FROM latest_labels").description]
    assert column not in names and "note" in names
