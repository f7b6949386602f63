"""What `contam run` holds does not grow with the run: DuckDB works on one thread under a small
memory limit while an import compares its file with the store, while the pending items are found
and while the writer commits (its buffer pool would otherwise keep every block a checkpoint
loads); the pending items' seqs pass through a spool a page at a time; an import leaves no staged
table behind. Each is checked by what is held or set, not by timing or RSS."""

from __future__ import annotations

import csv
from tempfile import SpooledTemporaryFile

import anyio
import duckdb
import pytest

from contam.harness.engine.writer import COMMIT_MEMORY, BatchWriter
from contam.harness.jobs import importing
from contam.harness.store import Store
from contam.harness.store import cells as cells_module
from contam.harness.store.cells import PENDING_MEMORY, count_unanswered, unanswered
from contam.harness.store import memory as memory_module
from contam.harness.store.access import reading
from contam.harness.store.host import StoreHost
from contam.harness.store.memory import bounded_memory, serving_read, within_bounds
from contam.harness.store.staging import IMPORT_MEMORY

ITEMS = 20


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "s.duckdb", create=True) as opened:
        opened.append("items", [{"item_id": f"q{i:02d}", "question": f"Question {i}?",
                                 "reference": f"Reference {i}"} for i in range(ITEMS)])
        yield opened


def _settings(con) -> tuple[str, int]:
    """(memory_limit, threads) as DuckDB reports them on ``con`` now."""
    return tuple(con.execute("SELECT current_setting('memory_limit'), "
                             "current_setting('threads')").fetchall()[0])


def _bounded(limit: str) -> tuple[str, int]:
    """The settings DuckDB reports under a bound of ``limit``, as a fresh database says them."""
    with duckdb.connect() as con:
        con.execute(f"SET memory_limit = '{limit}'")
        return con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0], 1


def test_bounded_memory_is_one_thread_under_the_limit_and_puts_both_back(store):
    before = _settings(store.con)
    with bounded_memory(store, "32MB"):
        assert _settings(store.con) == _bounded("32MB") != before
    assert _settings(store.con) == before


class _CannotFree:
    """A connection whose DuckDB cannot free enough memory to lower its limit."""

    def __init__(self, con) -> None:
        self._con = con

    def execute(self, sql, *args):
        if sql.startswith("SET memory_limit"):
            raise duckdb.OutOfMemoryException("could not free up enough memory")
        return self._con.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._con, name)


def test_bounded_memory_goes_on_under_the_limit_it_has_when_duckdb_cannot_free_enough(store):
    limit = _settings(store.con)[0]
    store.con = _CannotFree(store.con)
    try:
        with bounded_memory(store, "32MB"):
            assert _settings(store.con) == (limit, 1)
    finally:
        store.con = store.con._con
    assert _settings(store.con)[0] == limit


def test_a_callers_lower_limit_is_never_raised(store):
    store.con.execute("SET memory_limit = '16MB'")
    before = _settings(store.con)
    with bounded_memory(store, "32MB"):
        assert _settings(store.con) == (before[0], 1)
    assert _settings(store.con) == before


def test_no_limit_is_lowered_while_the_host_serves_a_read(store):
    """DuckDB's limit is the whole database's: a read needing more than the bound would fail."""
    before = _settings(store.con)
    with serving_read(store), serving_read(store):
        with bounded_memory(store, "32MB"):
            assert _settings(store.con) == (before[0], 1)
    with bounded_memory(store, "32MB"):
        assert _settings(store.con) == _bounded("32MB")


def test_duckdbs_own_limit_put_back_at_every_commit_is_the_limit_it_was(store):
    """DuckDB reads a limit back in rounded words: set again by them at each commit, its default
    wore down by a tenth of a GiB a commit (18.8, 18.7, 18.6 ...)."""
    before = _settings(store.con)
    for _ in range(5):
        with bounded_memory(store, "32MB"):
            pass
    assert _settings(store.con) == before


def test_each_commit_of_the_writer_is_made_under_the_bounded_memory(store, monkeypatch):
    seen: list[tuple[str, int]] = []
    transaction = store.transaction
    monkeypatch.setattr(store, "transaction",
                        lambda: seen.append(_settings(store.con)) or transaction())
    before = _settings(store.con)

    async def main():
        async with BatchWriter(store, max_writes=2, min_age_s=0, journal=False) as writer:
            for i in range(6):
                await writer.write_durably({"answers": [{"item_id": f"q{i:02d}", "model": "m",
                                                          "answer": "a"}]})

    anyio.run(main)
    assert len(seen) == 6 and set(seen) == {_bounded(COMMIT_MEMORY[0])}
    assert store.count("answers") == 6 and _settings(store.con) == before


def test_work_that_runs_out_of_memory_under_a_bound_is_done_again_under_the_next(store):
    own = _settings(store.con)
    tries: list[tuple[str, int]] = []

    def work():
        tries.append(_settings(store.con))
        if len(tries) == 1:
            raise duckdb.OutOfMemoryException("could not allocate block of size 256.0 KiB")
        return "done"

    assert within_bounds(store, ("32MB", None), work) == "done"
    assert tries == [_bounded("32MB"), (own[0], 1)] and _settings(store.con) == own


def test_a_commit_that_runs_out_of_memory_under_the_bound_is_made_all_the_same(store, monkeypatch):
    transaction, failed = store.transaction, []

    def first_fails():
        if not failed:
            failed.append(True)
            raise duckdb.OutOfMemoryException("failed to pin block of size 256.0 KiB")
        return transaction()

    monkeypatch.setattr(store, "transaction", first_fails)

    async def main():
        async with BatchWriter(store, journal=False) as writer:
            await writer.write_durably({"answers": [{"item_id": "q00", "model": "m",
                                                      "answer": "a"}]})
        return writer.failure

    assert anyio.run(main) is None and failed
    assert store.query("SELECT item_id FROM answers") == [("q00",)]


class _RecordingConnection:
    """A store's connection that notes DuckDB's settings as each query of a run's pending work
    starts (the count, and the seqs), on the connection or on a cursor of it."""

    def __init__(self, con) -> None:
        self._con, self.seen = con, []

    def _note(self, sql: str) -> None:
        if "FROM answers a WHERE a.model = $model" in sql:
            self.seen.append(_settings(self._con))

    def execute(self, sql, *args):
        self._note(sql)
        return self._con.execute(sql, *args)

    def cursor(self):
        cursor, note = self._con.cursor(), self._note

        class Cursor:
            def execute(self, sql, *args):
                note(sql)
                return cursor.execute(sql, *args)
        return Cursor()

    def __getattr__(self, name):
        return getattr(self._con, name)


def test_the_pending_work_is_found_under_the_bounded_memory(store):
    recording = _RecordingConnection(store.con)
    store.con = recording
    try:
        before = _settings(recording)
        assert count_unanswered(store, "m", None) == ITEMS
        assert len(list(unanswered(store, "m", None, page=4))) == ITEMS
    finally:
        store.con = recording._con
    assert recording.seen == [_bounded(PENDING_MEMORY[0])] * 2
    assert _settings(store.con) == before


def test_the_pending_seqs_are_held_a_page_at_a_time_in_a_spool(store, monkeypatch):
    spools: list[_RecordingSpool] = []
    monkeypatch.setattr(cells_module, "SpooledTemporaryFile",
                        lambda **options: spools.append(_RecordingSpool(**options)) or spools[-1])
    store.append("answers", [{"item_id": "q03", "model": "m", "answer": "a"}])
    pending = unanswered(store, "m", None, page=4)
    first = next(pending)
    [spool] = spools
    assert spool.written == (ITEMS - 1) * 8 and spool.largest_read == 4 * 8  # 8 bytes a seq
    assert [first, *pending][:4] == [
        (f"q{i:02d}", None, None, f"Question {i}?", None) for i in (0, 1, 2, 4)]
    assert spool.closed  # read to its end: gone


class _RecordingSpool(SpooledTemporaryFile):
    """A spool that notes the bytes written to it and the largest read from it."""

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.written = self.largest_read = 0

    def write(self, data):
        self.written += len(data)
        return super().write(data)

    def read(self, *size):
        data = super().read(*size)
        self.largest_read = max(self.largest_read, len(data))
        return data


def test_an_import_compares_under_the_bounded_memory_and_leaves_no_staged_table(
        store, tmp_path, monkeypatch):
    path = tmp_path / "items.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "question", "reference"])
        writer.writerows([f"q{i:02d}", f"Question {i}?", f"Changed {i}"] for i in range(3))
    seen: list[tuple[str, int]] = []
    append_new_rows = importing.append_new_rows
    monkeypatch.setattr(importing, "append_new_rows", lambda opened, kind: seen.append(
        _settings(opened.con)) or append_new_rows(opened, kind))
    before = _settings(store.con)
    assert importing.import_file(store, "items", path).added == 3
    assert seen == [_bounded(IMPORT_MEMORY[0])] and _settings(store.con) == before
    assert store.query("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'staged'") == [(0,)]


def test_the_host_counts_each_read_it_serves_as_one_in_flight(tmp_path, monkeypatch):
    seen: list[int] = []
    read = StoreHost._read
    monkeypatch.setattr(StoreHost, "_read", lambda host, *args: seen.append(
        memory_module._reads.get(id(host.store), 0)) or read(host, *args))
    path = tmp_path / "hosted.duckdb"
    with Store(path, create=True) as store, StoreHost(store, command="run"):
        with reading(path) as reader:
            assert reader.through_host and reader.count("items") == 0
        assert seen == [1] and id(store) not in memory_module._reads
