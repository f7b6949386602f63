"""The pending work of a run is read from the store a page at a time: the same cells, in the same
order, as the latest items without an answer, and never more than a page of rows held at once."""

from __future__ import annotations

import pytest

from contam.harness.store import Store
from contam.harness.jobs import score as score_job
from contam.harness.store import cells as cells_module
from contam.harness.store.cells import DueCells, count_unanswered, unanswered, unscored

ITEMS = 23


class _CountingCursor:
    """A DuckDB cursor that adds the item rows each fetchall returns to its connection's tally."""

    def __init__(self, cursor, tally: list[int]) -> None:
        self._cursor, self._tally = cursor, tally

    def execute(self, *args):
        self._cursor.execute(*args)
        return self

    def fetchall(self):
        rows = self._cursor.fetchall()
        self._tally.append(len(rows))
        return rows

    def fetchmany(self, size):  # the pending items' seqs: one integer a row, not tallied
        return self._cursor.fetchmany(size)


class _CountingConnection:
    def __init__(self, con) -> None:
        self._con, self.fetched = con, []

    def cursor(self):
        return _CountingCursor(self._con.cursor(), self.fetched)

    def __getattr__(self, name):
        return getattr(self._con, name)


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "s.duckdb", create=True) as opened:
        opened.append("items", [{"item_id": f"q{i:02d}", "title": "T", "subset": "official",
                                 "question": f"Question {i}?", "extra": '{"n": %d}' % i}
                                for i in reversed(range(ITEMS))])  # file order: q22 first
        opened.append("items", [{"item_id": "q05", "title": "T", "subset": "fan",
                                 "question": "Corrected 5?"}])  # a newer row of q05
        opened.append("answers", [{"item_id": f"q{i:02d}", "model": "m", "answer": "a"}
                                  for i in (0, 7, 21)])
        opened.append("answers", [{"item_id": "q03", "model": "other", "answer": "a"}])
        yield opened


def _expected(store: Store, limit: int | None) -> list[tuple]:
    """The same question asked of the latest_items view, whole."""
    scope = sorted(store.query("SELECT item_id, min(seq) FROM items GROUP BY item_id"),
                   key=lambda row: row[1])[:limit]
    answered = {row[0] for row in store.query("SELECT item_id FROM answers WHERE model = 'm'")}
    latest = {row[0]: row for row in store.query(
        "SELECT item_id, title, subset, question, extra::VARCHAR FROM latest_items")}
    return [latest[item] for item, _ in scope if item not in answered]


@pytest.mark.parametrize("limit", [None, 10])
def test_pending_items_are_the_latest_unanswered_ones_in_file_order(store, limit):
    expected = _expected(store, limit)
    assert list(unanswered(store, "m", limit, page=4)) == expected
    assert count_unanswered(store, "m", limit) == len(expected)
    assert expected[0][0] == "q22"  # file order, not id order
    assert (("q05", "T", "fan", "Corrected 5?", None) in expected) == (limit is None)


def test_pending_work_is_fetched_a_page_at_a_time(store):
    counting = _CountingConnection(store.con)
    store.con = counting
    try:
        taken = 0
        for taken, _ in enumerate(unanswered(store, "m", None, page=4), start=1):
            assert sum(counting.fetched) <= taken + 3  # at most the rest of the current page
    finally:
        store.con = counting._con
    assert taken == ITEMS - 3
    assert max(counting.fetched) == 4


def test_answers_written_between_pages_do_not_disturb_the_reading(store):
    before = _expected(store, None)
    pending = unanswered(store, "m", None, page=2)
    first = next(pending)
    with store.transaction():
        store.append("answers", [{"item_id": before[5][0], "model": "m", "answer": "b"}])
    assert [first, *pending] == before  # the work as it was when the run began


# -- score: the cells due for a metric, read a chunk at a time --------------------------------

def _answered_store(store: Store) -> Store:
    store.append("answers", [{"item_id": f"q{i:02d}", "model": "m", "answer": f"Answer {i}"}
                             for i in range(8, 20)])
    store.append("answers", [{"item_id": "q09", "model": "m", "answer": "   "}])  # blank, newer
    store.append("items", [{"item_id": "q11", "title": "T", "subset": "fan", "question": "Q?",
                            "reference": ""}])  # an empty reference: flagged
    store.append("items", [{"item_id": f"q{i:02d}", "title": "T", "subset": "official",
                            "question": "Q?", "reference": f"Answer {i}"} for i in (12, 13)])
    return store


@pytest.mark.parametrize("per_range", [None, 1, 3])
def test_due_cells_are_the_unscored_ones_in_order_and_come_in_bounded_chunks(store, per_range):
    _answered_store(store)
    due = DueCells(store, "bleu2", '{"a": 1}', per_range=per_range)
    assert (len(due.ranges) > 4) == (per_range is not None)  # several ranges of 18 answer rows
    chunks = list(due.chunks(5))
    assert [len(chunk) for chunk in chunks] == [5, 5, 5, 1]
    assert [row for chunk in chunks for row in chunk] == unscored(store, "bleu2", '{"a": 1}')
    assert (len(due), due.answered) == (16, 16)


def test_due_cells_read_by_ranges_leave_out_the_up_to_date_ones(store):
    _answered_store(store)
    params = score_job._params_json({"a": 1})
    store.append("scores", [{"item_id": item, "model": "m", "metric": "bleu2", "value": 0.5,
                             "params": params} for item in ("q08", "q10", "q15")])
    store.append("answers", [{"item_id": "q10", "model": "m", "answer": "newer"}])  # stale again
    due = DueCells(store, "bleu2", params, per_range=2)
    rows = [row for chunk in due.chunks(4) for row in chunk]
    assert rows == unscored(store, "bleu2", params)
    assert {row[0] for row in rows} >= {"q10"} and not {"q08", "q15"} & {row[0] for row in rows}
    assert (len(due), due.answered) == (14, 16)


def test_a_surface_metric_scores_and_writes_a_batch_at_a_time(store, monkeypatch):
    _answered_store(store)
    monkeypatch.setattr(score_job, "_WRITE_BATCH", 4)
    written: list[int] = []
    append = store.append
    monkeypatch.setattr(store, "append",
                        lambda table, rows: written.append(len(rows)) or append(table, rows))
    scored: list[int] = []
    surface_scorer = score_job._surface_scorer

    def counting_scorer(spec, study):  # the metric as it is, each call's batch size noted
        score_many, params = surface_scorer(spec, study)
        return (lambda pairs: scored.append(len(pairs)) or score_many(pairs)), params

    monkeypatch.setattr(score_job, "_surface_scorer", counting_scorer)
    [summary] = score_job.score_store(store, ["bleu2"])
    assert scored == written == [4, 4, 4, 4] and (summary.scored, summary.skipped) == (16, 0)
    # only q12 and q13 have a reference: the 13 other answers are flagged, and q09 is blank
    assert (summary.null, summary.flagged) == (14, 13)
    scores = dict(store.query("SELECT item_id, value FROM latest_scores WHERE model = 'm'"))
    assert scores["q12"] == pytest.approx(1.0) and scores["q09"] is None and scores["q11"] is None
    [again] = score_job.score_store(store, ["bleu2"])
    assert (again.scored, again.skipped) == (0, 16)


def test_scores_read_a_range_at_a_time_are_those_of_one_read(store, tmp_path, monkeypatch):
    """The same store scored twice, once as one range, once as ranges of two cells: same rows."""
    _answered_store(store)
    store.con.execute(f"ATTACH '{tmp_path / 'copy.duckdb'}' AS copy")
    store.con.execute("COPY FROM DATABASE s TO copy")
    store.con.execute("DETACH copy")
    [whole] = score_job.score_store(store, ["bleu2"])
    monkeypatch.setattr(cells_module, "_RANGE_CELLS", 2)
    with Store(tmp_path / "copy.duckdb") as copy:
        [ranged] = score_job.score_store(copy, ["bleu2"])
        assert _scores(copy) == _scores(store)
    assert (ranged.scored, ranged.null, ranged.flagged) == (whole.scored, whole.null, whole.flagged)


def _scores(store: Store) -> list[tuple]:
    return store.query("SELECT item_id, model, value, params FROM latest_scores ORDER BY ALL")
