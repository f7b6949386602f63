"""The report's cells frame is read a range of item ids at a time (DuckDB's work bounded by one
range): read in many ranges it is the frame read in one, row for row, in (model, item) order
even where the item ids do not sort as the items were imported, with a model the rater labelled
nowhere NULL throughout, under labels and under a metric's outcome."""

from __future__ import annotations

import pandas.testing as pdt
import pytest

from contam.harness.report.inputs import cells as cells_module
from contam.harness.report.inputs.cells import Cells
from contam.harness.store import Store, utc_now
from contam.harness.store import cells as store_cells
from contam.metrics.metric_registry import rule_metrics
from contam.metrics.outcome import parse_outcome

ITEMS = ["q9", "a3", "m1", "z0", "b7", "k2", "c5", "y4"]  # imported in this order, not sorted
MODELS = ("m-labelled", "m-unlabelled", "m-judged")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    now, path = utc_now(), tmp_path_factory.mktemp("ranges") / "s.duckdb"
    cells = [(i, m) for i in ITEMS for m in MODELS if (i, m) != ("z0", "m-judged")]  # one unanswered
    with Store(path, create=True) as opened, opened.transaction():
        opened.append("items", [{"item_id": i, "title": "T", "subset": ("doc", "undoc")[n % 2],
                                 "question": f"{i}?", "reference": "ref", "added_at": now}
                                for n, i in enumerate(ITEMS)])
        opened.append("answers", [{"item_id": i, "model": m, "answer": "" if i == "k2" else f"a {i}",
                                   "answer_raw": "x", "created_at": now} for i, m in cells])
        opened.append("labels", [{"item_id": i, "model": "m-labelled", "rater": "human",
                                  "label": ("right", "wrong", "partial")[n % 3], "created_at": now}
                                 for n, i in enumerate(ITEMS[:5])])
        opened.append("labels", [{"item_id": i, "model": "m-judged", "rater": "judge:j",
                                  "label": "right", "created_at": now} for i in ITEMS[:3]])
        opened.append("scores", [{"item_id": i, "model": m, "metric": "bleu2", "value": n / 10,
                                  "created_at": now} for n, (i, m) in enumerate(cells)])
    with Store(path, read_only=True) as opened:
        yield opened


def _frame(store: Store, correct: str | None, monkeypatch, per_range: int):
    monkeypatch.setattr(cells_module, "_RANGE_CELLS", per_range * len(MODELS))
    return Cells(store, "human", "judge:j", parse_outcome(correct) if correct else None).frame()


@pytest.mark.parametrize("correct", [None, "bleu2 >= 0.5"])
def test_the_frame_read_in_many_ranges_is_the_frame_read_in_one(store, monkeypatch, correct):
    ranges = []
    original = store_cells.item_ranges
    monkeypatch.setattr(cells_module, "item_ranges",
                        lambda *a, **k: ranges.append(original(*a, **k)) or ranges[-1])
    whole, ranged = _frame(store, correct, monkeypatch, 10_000), _frame(store, correct, monkeypatch, 1)
    assert len(ranges[0]) == 1 and len(ranges[1]) > 2  # the second read did work in ranges
    pdt.assert_frame_equal(ranged, whole)
    assert list(ranged["model"]) == sorted(ranged["model"]) and len(ranged) == len(ITEMS) * 3
    ids = _ids(store)
    for model in MODELS:  # within a model in import order, which the ids' order is not
        assert [ids[seq] for seq in ranged[ranged["model"] == model]["item_seq"]] == ITEMS


def _ids(store: Store) -> dict[int, str]:
    """item_seq -> item id: the frame keys an item by its seq (its id stays in the store)."""
    return dict(store.query("SELECT seq, item_id FROM latest_items"))


def test_each_cells_effective_label_follows_the_lower_bound_rule(store, monkeypatch):
    frame = _frame(store, None, monkeypatch, 1)
    frame = frame.assign(item_id=frame["item_seq"].map(_ids(store))).set_index(["model", "item_id"])
    assert frame.loc[("m-unlabelled", slice(None)), "human"].isna().all()  # labelled nowhere
    assert frame.loc[("m-labelled", "k2"), "human"] == "wrong"  # an empty answer, unlabelled
    assert frame.loc[("m-labelled", "q9"), "human"] == "right"
    assert frame.loc[("m-labelled", "y4"), "human"] != frame.loc[("m-labelled", "y4"), "human"]  # NULL: answered, unlabelled
    assert frame.loc[("m-judged", "z0"), "judge"] == "wrong"  # unanswered and unjudged
    assert frame.loc[("m-judged", "c5"), "judge"] != frame.loc[("m-judged", "c5"), "judge"]
    assert frame.loc[("m-labelled", slice(None)), "judge"].isna().all()


def test_only_the_rule_metrics_with_scores_have_a_column(store, monkeypatch):
    """A rule metric nobody scored would be a column of NULLs, 8 bytes a cell: it is not read."""
    frame = _frame(store, None, monkeypatch, 10_000)
    assert rule_metrics() and not set(rule_metrics()) & set(frame.columns)
    assert frame["bleu2"].notna().sum() == len(ITEMS) * len(MODELS) - 1  # the one unanswered cell


def test_an_items_seq_and_an_answers_words_take_four_bytes_a_cell(store, monkeypatch):
    frame = _frame(store, None, monkeypatch, 10_000)
    assert str(frame["item_seq"].dtype) == "int32" and str(frame["answer_words"].dtype) == "int32"
    unanswered = frame[(frame["model"] == "m-judged") & ~frame["has_answer"]]
    assert len(unanswered) == 1 and unanswered["answer_words"].tolist() == [0]
    assert frame.loc[frame["answered"], "answer_words"].tolist() == [2] * int(frame["answered"].sum())


def test_a_seq_past_four_bytes_keeps_eight(store):
    assert cells_module._seq_type(store) == "INTEGER"
    with_big = type("Big", (), {"query": lambda self, sql: [(2**31,)]})()
    assert cells_module._seq_type(with_big) == "BIGINT"
