"""What a read through a running job may take from it: a query whose client has gone is
stopped, every read has a time limit, and a result past the row or byte cap is refused in one
line pointing to a read after the run; `contam sql --help` states the limits."""

from __future__ import annotations

import os
import threading
import time

import httpx
import pytest

from contam.harness.errors import UserError
from contam.harness.store import Store
from contam.harness.store import host as host_module
from contam.harness.store.client import HostReader
from contam.harness.store.host import StoreHost

ENDLESS = "SELECT count(*) FROM range(1000000000000) a, range(1000) b"


@pytest.fixture
def hosted(tmp_path):
    path = tmp_path / "store.duckdb"
    with Store(path, create=True) as store, StoreHost(store, command="run") as host:
        yield path, host


def wait_until(condition, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_query_whose_client_is_gone_is_stopped(hosted):
    path, host = hosted
    transport = httpx.HTTPTransport(uds=host.holder.socket)
    with httpx.Client(transport=transport, base_url="http://h", timeout=1.0,
                      headers={"Authorization": f"Bearer {host.holder.token}"}) as http:
        with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes its connection
            http.post("/query", json={"sql": ENDLESS})
    assert wait_until(lambda: not host._active), "the abandoned query is still running"
    with HostReader(path, host.holder) as reader:  # the slot is free again
        assert reader.query("SELECT 42") == [(42,)]


def test_a_read_past_its_time_limit_is_stopped_in_one_line(hosted, monkeypatch):
    path, host = hosted
    monkeypatch.setattr(host_module, "READ_LIMIT_S", 0.5)
    with HostReader(path, host.holder) as reader:
        with pytest.raises(UserError, match="ran past the .* s a running job gives a read"):
            reader.query(ENDLESS)
        assert reader.query("SELECT 1") == [(1,)]
    assert not host._active


@pytest.mark.parametrize("cap, value", [("MAX_ROWS", 1_000), ("MAX_BYTES", 64 << 10)])
def test_a_result_past_the_cap_is_refused_pointing_to_after_the_run(hosted, monkeypatch, cap,
                                                                    value):
    path, host = hosted
    monkeypatch.setattr(host_module, cap, value)
    with HostReader(path, host.holder) as reader:
        with pytest.raises(UserError) as refused:
            reader.query("SELECT range AS n, repeat('x', 100) AS pad FROM range(100000)")
        assert reader.query("SELECT count(*) FROM range(500)") == [(500,)]  # small ones pass
    message = str(refused.value)
    assert "larger than a running job serves" in message and "COPY" in message
    assert "once the job has finished" in message and "\n" not in message


def test_a_result_under_the_caps_comes_back_whole(hosted):
    path, host = hosted
    with HostReader(path, host.holder) as reader:
        rows = reader.query("SELECT range AS n, 'v' || range AS s FROM range(25000)")
    assert len(rows) == 25000 and rows[-1] == (24999, "v24999")


def test_contam_sql_help_states_the_limits(capsys):
    from contam.harness.cli import main

    with pytest.raises(SystemExit):
        main(["sql", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"after {host_module.READ_LIMIT_S:.0f} s" in text
    assert f"over {host_module.MAX_ROWS:,} rows or {host_module.MAX_BYTES >> 20} MiB" in text


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux's scheduling classes")
def test_reads_are_worked_on_two_at_a_time_on_idle_class_threads(hosted, monkeypatch):
    """Six readers at once take at most two threads, each in Linux's idle scheduling class, so
    the job's own threads keep the cores (bench_reads.py part 3 measures the run); the job's
    progress answers while both are taken."""
    path, host = hosted
    real, lock, release = host._read, threading.Condition(), threading.Event()
    seen = {"inside": 0, "peak": 0, "policies": []}

    def held(sql, params, watch):
        with lock:
            seen["inside"] += 1
            seen["peak"] = max(seen["peak"], seen["inside"])
            seen["policies"].append(os.sched_getscheduler(0))  # 0: this thread
        release.wait(10)  # the first two stay in until the test has asked for progress
        try:
            return real(sql, params, watch)
        finally:
            with lock:
                seen["inside"] -= 1

    monkeypatch.setattr(host, "_read", held)
    answers = []

    def read() -> None:
        with HostReader(path, host.holder) as reader:
            answers.append(reader.query("SELECT 7"))

    threads = [threading.Thread(target=read) for _ in range(6)]
    for thread in threads:
        thread.start()
    assert wait_until(lambda: seen["inside"] == 2)
    with HostReader(path, host.holder) as reader:
        assert reader.progress() == []
    reads_in_at_progress = seen["inside"]
    release.set()
    for thread in threads:
        thread.join(60)
    assert answers == [[(7,)]] * 6
    assert seen["peak"] == 2 and reads_in_at_progress == 2
    assert seen["policies"] == [os.SCHED_IDLE] * 6


def duckdb_threads(store: Store) -> int:
    return store.query("SELECT current_setting('threads')")[0][0]


def test_a_read_is_worked_on_one_duckdb_thread_and_the_job_gets_its_threads_back(hosted):
    """DuckDB's thread count is the database's: a reader's query runs with one (its own
    idle-class thread, never DuckDB's workers), and the job's queries get the default back."""
    path, host = hosted
    default = duckdb_threads(host.store)
    if default == 1:
        pytest.skip("one core: DuckDB's default is one thread already")
    with HostReader(path, host.holder) as reader:
        assert reader.query("SELECT current_setting('threads')") == [(1,)]
    assert duckdb_threads(host.store) == default


def test_a_read_during_a_write_leaves_the_writer_on_one_thread(hosted):
    path, host = hosted
    default = duckdb_threads(host.store)
    host.store.single_threaded(True)  # as the job's writer does while it writes
    with HostReader(path, host.holder) as reader:
        assert reader.query("SELECT current_setting('threads')") == [(1,)]
    assert duckdb_threads(host.store) == 1  # the reader let go; the writer has not
    host.store.single_threaded(False)
    assert duckdb_threads(host.store) == default


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux's scheduling classes")
def test_duckdbs_worker_threads_are_not_born_in_the_readers_idle_class(hosted):
    """DuckDB starts its workers again when its one-thread hold ends; started from a reader's
    thread they would inherit its idle class and starve the job's own queries."""
    path, host = hosted
    if duckdb_threads(host.store) == 1:
        pytest.skip("one core: DuckDB starts no worker threads")
    with HostReader(path, host.holder) as reader:
        reader.query("SELECT 1")
    host.store.query("SELECT sum(range) FROM range(1000000)")  # the job's query, on workers
    readers = {t.native_id for t in threading.enumerate() if t.name.startswith("contam-store-reader")}
    idle = {int(tid) for tid in os.listdir("/proc/self/task")
            if _policy(int(tid)) == os.SCHED_IDLE}
    assert readers and readers <= idle
    assert _ended(idle - readers)  # a reader's thread that finished, still leaving; never a worker


def _ended(tids: set[int], within_s: float = 10.0) -> bool:
    """Whether each thread has left the process (a DuckDB worker never does)."""
    deadline = time.monotonic() + within_s
    while any(os.path.exists(f"/proc/self/task/{tid}") for tid in tids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _policy(tid: int) -> int | None:
    try:
        return os.sched_getscheduler(tid)
    except OSError:  # the thread ended meanwhile
        return None
