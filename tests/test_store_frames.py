"""A query's frame with its repetitive string columns as categoricals, read a chunk at a time:
the same values as DuckDB's own ``df()``, in the same order, grouped and sorted the same way."""

from __future__ import annotations

import duckdb
import pandas as pd
import pandas.testing as pdt
import pytest

from contam.harness.store import Store
from contam.harness.store import store as store_module
from contam.harness.store.frames import query_frame

# 5,000 rows: with one vector (2,048 rows) a chunk, three chunks, each with other categories (the
# first chunk has no "fan" subset, the last no "official"), and a column NULL in a whole chunk.
_SQL = """
SELECT i AS n, 'q' || i AS item_id,
       CASE WHEN i < 2048 THEN 'official' WHEN i < 4096 THEN (['official', 'fan'])[i % 2 + 1]
            ELSE 'fan' END AS subset,
       CASE WHEN i BETWEEN 2048 AND 4095 THEN NULL ELSE 'm' || (i % 3) END AS model
FROM range(5000) t(i) ORDER BY i
"""


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "s.duckdb", create=True) as opened:
        yield opened


@pytest.mark.parametrize("vectors", [1, 10])
def test_a_frame_with_categories_holds_the_values_of_a_plain_one(store, monkeypatch, vectors):
    monkeypatch.setattr(store_module, "_FRAME_CHUNK_VECTORS", vectors)
    plain = store.query_df(_SQL)
    compact = store.query_df(_SQL, None, ("subset", "model"))
    assert isinstance(compact["subset"].dtype, pd.CategoricalDtype)
    assert list(compact["subset"].cat.categories) == ["fan", "official"]  # sorted, as strings sort
    assert list(compact["model"].cat.categories) == ["m0", "m1", "m2"]
    pdt.assert_frame_equal(compact.astype({"subset": plain["subset"].dtype,
                                           "model": plain["model"].dtype}), plain)
    groups = [list(frame.groupby(["model", "subset"]).size().items()) for frame in (compact, plain)]
    assert groups[0] == groups[1]  # the same groups, in the same order, no empty ones


def test_an_empty_result_keeps_its_columns(store):
    frame = store.query_df("SELECT 'a' AS subset, 1 AS n WHERE false", None, ("subset",))
    assert list(frame.columns) == ["subset", "n"] and len(frame) == 0


def test_a_frame_too_big_for_the_lowered_memory_limit_is_still_read(store, monkeypatch):
    """DuckDB refuses the frame under its lowered limit (made tiny here): it is read without."""
    monkeypatch.setattr(store_module, "READ_MEMORY", ("1MB", "2MB"))
    sql = "SELECT i, 'x' || (i % 5) AS subset FROM range(300000) t(i) ORDER BY i DESC"
    with pytest.raises(duckdb.OutOfMemoryException):  # the limit alone does refuse it (or its SET)
        with store.memory_limit("1MB"):
            store.query(sql)
    frame = store.query_df(sql, None, ("subset",))
    assert len(frame) == 300_000 and frame["i"].iloc[0] == 299_999
    assert store.query("SELECT current_setting('memory_limit')")[0][0] != "1.0 MiB"  # put back


def test_a_lean_store_reads_under_the_lowest_limit_and_under_more_when_refused(store, monkeypatch):
    """`contam report`'s store: DuckDB's limit stays at the first between reads (its buffer pool
    and allocator would otherwise keep what each read took); a read the limit refuses is worked
    under the next, then under DuckDB's default, and the lowest limit comes back."""
    monkeypatch.setattr(store_module, "READ_MEMORY", ("8MB", "9MB"))
    store.lean()
    lowest = store.query("SELECT current_setting('memory_limit')")[0][0]
    sql = "SELECT i, 'x' || (i % 5) AS subset FROM range(2000000) t(i) ORDER BY i DESC"
    assert store.query(sql)[0] == (1_999_999, "x4")
    assert store.query_dicts(sql)[-1] == {"i": 0, "subset": "x0"}
    assert len(store.query_df(sql)) == 2_000_000
    assert store.query("SELECT current_setting('memory_limit')")[0][0] == lowest
    with pytest.raises(duckdb.OutOfMemoryException):  # the lowest does refuse it
        store.con.execute(sql).fetchall()


def test_every_grouping_in_the_report_keeps_only_the_groups_it_sees():
    """pandas before 3.0 groups a categorical by every category (observed=False), a cartesian
    product of model x title x subset: each groupby and pivot_table of the report says
    observed=True, so the report is the same under pandas 2 and 3."""
    import ast
    from pathlib import Path

    report = Path(__file__).resolve().parents[1] / "harness" / "report"
    unbounded = []
    for path in report.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in {"groupby", "pivot_table"}
                    and "observed" not in {k.arg for k in node.keywords}):
                unbounded.append(f"{path.relative_to(report)}:{node.lineno}")
    assert unbounded == []


def test_a_frame_refused_under_the_first_limit_is_read_under_the_next(store, monkeypatch):
    monkeypatch.setattr(store_module, "READ_MEMORY", ("1MB", "1GB"))
    tried, lowered = [], store.memory_limit
    monkeypatch.setattr(store, "memory_limit", lambda limit: tried.append(limit) or lowered(limit))
    frame = store.query_df("SELECT i, 'x' || (i % 5) AS subset FROM range(300000) t(i) ORDER BY i DESC",
                           None, ("subset",))
    assert tried == ["1MB", "1GB"] and len(frame) == 300_000 and frame["i"].iloc[0] == 299_999


def test_a_frame_read_once_answers_a_grouped_query_as_the_store_does(store):
    """The report's counts are worked on its cells frame, not over the store's joins again: the
    same rows, its categorical columns and NULLs included, and ``$1`` ... its own parameters."""
    select = ("SELECT model, subset, count(*) AS n, count(model) FILTER (WHERE subset = $1) AS "
              "official, min(n) AS first, median(n) AS middle FROM c GROUP BY ALL ORDER BY ALL")
    frame = store.query_df(_SQL, None, ("subset", "model"))
    expected = store.query_dicts(f"WITH c AS ({_SQL}) {select}", ["official"])
    assert query_frame(frame, select, ["official"]) == expected
    assert len(expected) == 8 and {r["model"] for r in expected} == {"m0", "m1", "m2", None}


def test_duckdbs_own_limit_comes_back_exactly_after_any_number_of_lowerings(store):
    """Set again by its rounded words ("18.8 GiB" reads back lower), DuckDB's default would wear
    down a little at every pass; it is put back by RESET."""
    default = store.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    for _ in range(5):
        with store.memory_limit("64MB"):
            pass
        with store.memory_limit(None):
            pass
    assert store.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0] == default
