"""A surface score pass keeps DuckDB's memory bounded: its due cells are read under one lowered
limit, and its writes and checkpoint under a lower one still, since a checkpoint fills the buffer
pool up to whatever limit it finds (the bigger the scores table, the more of it); and DuckDB works
on one thread meanwhile, since each thread keeps memory of its own."""

from __future__ import annotations

import duckdb
import pytest

from contam.harness.jobs import score as score_job
from contam.harness.store import Store
from contam.harness.store import cells as cells_module
from contam.harness.store.cells import DUE_MEMORY


def _scored_store(store: Store) -> Store:
    store.append("items", [{"item_id": f"q{i:02d}", "question": "Q?", "reference": f"Answer {i}"}
                           for i in range(12)])
    store.append("answers", [{"item_id": f"q{i:02d}", "model": model, "answer": f"Answer {i % 5}"}
                             for i in range(12) for model in ("a", "b")])
    return store


def _limit(store: Store) -> str:
    return store.query("SELECT current_setting('memory_limit')")[0][0]


def _as_duckdb_says(store: Store, limit: str) -> str:
    with store.memory_limit(limit):
        return _limit(store)


def _settings(store: Store) -> tuple[str, int]:
    """DuckDB's memory limit and threads now."""
    return store.query("SELECT current_setting('memory_limit'), current_setting('threads')")[0]


def _noting_settings(store: Store, monkeypatch) -> dict[str, list[tuple[str, int]]]:
    """DuckDB's settings at each write of scores, each checkpoint and each read of due cells."""
    seen: dict[str, list[tuple[str, int]]] = {"write": [], "checkpoint": [], "read": []}
    append, checkpoint, read = store.append, store.checkpoint, cells_module._on_own_cursor
    monkeypatch.setattr(store, "append", lambda table, rows: (
        seen["write"].append(_settings(store)), append(table, rows))[1])
    monkeypatch.setattr(store, "checkpoint", lambda: (
        seen["checkpoint"].append(_settings(store)), checkpoint())[1])
    monkeypatch.setattr(cells_module, "_on_own_cursor", lambda opened, sql, params: (
        seen["read"].append(_settings(opened)), read(opened, sql, params))[1])
    return seen


def test_a_surface_pass_reads_under_one_limit_writes_under_a_lower_one_on_one_thread(store, monkeypatch):
    _scored_store(store)
    monkeypatch.setattr(score_job, "_WRITE_BATCH", 5)
    monkeypatch.setattr(cells_module, "_RANGE_CELLS", 6)
    before = _settings(store)
    write_limit = _as_duckdb_says(store, score_job._WRITE_MEMORY)
    read_limit = _as_duckdb_says(store, DUE_MEMORY)
    seen = _noting_settings(store, monkeypatch)
    [summary] = score_job.score_store(store, ["bleu2"])
    assert summary.scored == 24 and store.count("scores") == 24
    assert seen["write"] == [(write_limit, 1)] * 5  # 24 cells, 5 a batch
    assert seen["checkpoint"] == [(write_limit, 1)]
    assert len(seen["read"]) > 2 and set(seen["read"]) == {(read_limit, 1)}
    assert _duckdb_bytes(write_limit) < _duckdb_bytes(read_limit)
    # put back (DuckDB writes the limit to one decimal, so a round trip may lose a little of it)
    limit, threads = _settings(store)
    assert threads == before[1] and limit not in (write_limit, read_limit)
    assert _duckdb_bytes(limit) > 0.9 * _duckdb_bytes(before[0])


def _duckdb_bytes(limit: str) -> float:
    number, unit = limit.split()
    return float(number) * {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[unit]


def _hold_memory_duckdb_cannot_free(store: Store, rows: int = 300_000) -> None:
    """A temporary table of ~32 MB with nowhere to spill to: DuckDB cannot go below it."""
    store.con.execute("SET temp_directory = ''")
    store.con.execute("CREATE TEMP TABLE held AS "
                      f"SELECT range::VARCHAR || repeat('x', 100) AS s FROM range({rows})")


def test_a_limit_that_cannot_be_had_now_is_refused_unless_asked_for_if_possible(store):
    _hold_memory_duckdb_cannot_free(store)
    before = _limit(store)
    with pytest.raises(duckdb.OutOfMemoryException):
        with store.memory_limit("16MB"):
            pass
    with store.memory_limit("16MB", if_possible=True):
        assert _limit(store) == before  # gone on under the limit it had
    assert _limit(store) == before


def test_a_surface_pass_still_writes_where_duckdb_cannot_lower_its_limit_for_the_writes(store):
    _scored_store(store)
    _hold_memory_duckdb_cannot_free(store)  # under the reads' limit, over the writes'
    [summary] = score_job.score_store(store, ["bleu2"])
    assert summary.scored == store.count("scores") == 24
    [again] = score_job.score_store(store, ["bleu2"])
    assert (again.scored, again.skipped) == (0, 24)
