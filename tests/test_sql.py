"""`contam sql`: read-only queries in three formats, one-line errors."""

from __future__ import annotations

import json

import pytest

from harness.store import Store


@pytest.fixture
def filled(store_path):
    with Store(store_path) as store:
        store.append("answers", [{"item_id": f"i{n}", "model": "m", "answer": f"a {n}"}
                                 for n in range(3)])
    return store_path


def test_csv_and_json_formats(contam, filled):
    status, out, _ = contam("sql", "--store", filled, "--format", "csv",
                            "select item_id, answer from latest_answers order by item_id")
    assert status == 0 and out.splitlines() == ["item_id,answer", "i0,a 0", "i1,a 1", "i2,a 2"]
    status, out, _ = contam("sql", "--store", filled, "--format", "json",
                            "select count(*) as n from cells")
    assert json.loads(out) == [{"n": 3}]


def test_table_format_shows_values(contam, filled):
    status, out, err = contam("sql", "--store", filled, "select model, count(*) from cells group by 1")
    assert status == 0 and "m" in out and "3" in out and "1 row" in err


def test_bad_query_is_one_line(contam, filled):
    status, _, err = contam("sql", "--store", filled, "select * from nowhere")
    assert status == 2 and len(err.strip().splitlines()) == 1 and "nowhere" in err


def test_writes_are_refused(contam, filled):
    status, _, err = contam("sql", "--store", filled, "insert into items (item_id) values ('x')")
    assert status == 2 and "read-only" in err.lower()
    with Store(filled, read_only=True) as store:
        assert store.count("items") == 0


def test_missing_store_is_one_line(contam, tmp_path):
    status, _, err = contam("sql", "--store", tmp_path / "none.duckdb", "select 1")
    assert status == 2 and "no such store" in err
