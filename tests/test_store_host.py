"""A job holding the store serves reads, label appends and its progress to other processes.

A real `contam run` process writes 2,000 cells while `contam sql`, `contam report`,
``live_progress`` and ``append_labels`` in this process go through its store host; the
hostile queries of test_sql go through a host too; the discovery file's life; the token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.emulator.settings import default_answer
from contam.harness.store import Store
from contam.harness.store.access import append_labels, live_progress, reading
from contam.harness.store.discovery import Holder, discovery_path, find_holder, publish
from contam.harness.store.host import StoreHost
from tests.runkit import KEYS, model_entry, question_number, write_config
from tests.test_sql import FILE_AND_NETWORK, REFUSED

ROOT = Path(__file__).resolve().parents[1]
PROGRESS_KEYS = {"model", "done", "total", "failed", "retries", "rate_limited", "in_flight",
                 "concurrency", "rate_per_s", "cooling_down_s", "stopped"}
LABEL = {"item_id": "q0001", "model": "openai-m", "rater": "human:ann", "label": "right"}


def new_store(path: Path) -> Store:
    """A new, migrated store."""
    return Store(path, create=True)


def start_run(config: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "contam.harness.cli", "run", str(config),
                             "--no-progress"], cwd=ROOT, env={**os.environ, **KEYS}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


class Gates:
    """An emulator responder that holds the run at two points (the emulator waits, so the run's
    requests wait) until the test opens each: the reads happen while the run is half-way."""

    def __init__(self, *items: int) -> None:
        self.gates = {item: threading.Event() for item in items}

    def __call__(self, question: str) -> str:
        for item, gate in self.gates.items():
            if question_number(question) >= item:
                gate.wait(60)
        return default_answer(question)

    def open(self, item: int) -> None:
        self.gates[item].set()


def wait_for(condition, process: subprocess.Popen | None = None, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process is None or process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def answers_seen(contam, store: Path) -> int:
    status, out, err = contam("sql", "--store", store, "--format", "json",
                              "select count(*) as n from answers")
    assert status == 0, err
    return json.loads(out)[0]["n"]


def test_a_running_job_serves_sql_report_progress_and_labels(contam, tmp_path):
    store, gates = tmp_path / "s.duckdb", Gates(100, 500)
    with run_emulator(EmulatorSettings(responder=gates)) as emu:
        config = write_config(tmp_path, [model_entry(api, emu, concurrency=8, timeout_s=60)
                                         for api in ("openai", "anthropic")],
                              items=1000, store="s.duckdb")
        run = start_run(config)
        wait_for(lambda: find_holder(store) is not None, run)
        token = find_holder(store).token
        assert discovery_path(store).stat().st_mode & 0o777 == 0o600
        seen = [answers_seen(contam, store)]
        gates.open(100)
        wait_for(lambda: answers_seen(contam, store) > seen[0], run)
        seen.append(answers_seen(contam, store))
        status, out, err = contam("report", "--store", store, "--format", "json")
        assert status == 0, err
        answered = [model["answers"] for model in json.loads(out)["provenance"]["models"]]
        assert sum(answered) >= seen[1]
        progress = live_progress(store)
        assert [row["model"] for row in progress] == ["openai-m", "anthropic-m"]
        assert all(set(row) == PROGRESS_KEYS and row["total"] == 1000 for row in progress)
        assert seen[1] <= sum(row["done"] for row in progress) < 2000
        assert progress[0]["concurrency"] == 8 and progress[0]["stopped"] is None
        assert append_labels(store, [LABEL]) == 1
        with reading(store) as reader:
            assert reader.through_host  # the run is still going
            assert reader.query("select rater, label from labels") == [("human:ann", "right")]
        gates.open(500)
        out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    assert seen[0] < seen[1] < 2000
    assert not discovery_path(store).exists() and not Path(f"{store}.sock").exists()
    assert live_progress(store) is None
    with reading(store) as reader:
        assert not reader.through_host
        assert reader.count("answers") == 2000 and reader.count("labels") == 1
    logs = "".join(p.read_text() for p in tmp_path.glob("*.log")) + out + err
    assert token not in logs and token.encode() not in store.read_bytes()


@pytest.fixture(scope="module")
def hosted(tmp_path_factory):
    """A store held for writing in this process, its host up: every reader here goes through it."""
    path = tmp_path_factory.mktemp("hosted") / "store.duckdb"
    with new_store(path) as store:
        store.append("items", [{"item_id": "i0", "title": "t", "subset": "fan"}])
        store.append("answers", [{"item_id": f"i{n}", "model": "m", "answer": f"a {n}"}
                                 for n in range(3)])
        with StoreHost(store, command="run") as host:
            yield path, host


def test_readers_in_another_connection_go_through_the_host(hosted):
    path, _ = hosted
    with reading(path) as reader:
        assert reader.through_host
        assert reader.count("answers") == 3
        assert reader.query("select item_id from answers where answer = ?", ["a 1"]) == [("i1",)]
        assert reader.query_dicts("select item_id, model from answers order by 1 limit 1") == [
            {"item_id": "i0", "model": "m"}]


def test_values_and_frames_come_back_as_a_direct_connection_gives_them(hosted):
    path, host = hosted
    query = ("select 1::int i, 2::hugeint * 100000000000000000000 h, 1.25::decimal(9,2) d, "
             "timestamp '2020-01-02 03:04:05.678901' ts, date '2020-01-02' dt, interval 90 minute iv, "
             "'a\\x00b\\x5C'::blob b, [1, 2] l, {'a': 1, 'b': timestamp '2020-01-01'} s, "
             "'nan'::double nan, null::varchar n, 'é<script>' v, seq, created_at from answers")
    with reading(path) as reader:
        through = reader.query(query), reader.query_df(query)
    direct_cursor = host.store.con.cursor()
    direct = direct_cursor.execute(query).fetchall(), direct_cursor.execute(query).df()
    assert [_nan_free(row) for row in through[0]] == [_nan_free(row) for row in direct[0]]
    assert through[1].dtypes.tolist() == direct[1].dtypes.tolist()
    assert through[1].drop(columns=["l", "s", "nan"]).equals(direct[1].drop(columns=["l", "s", "nan"]))


def _nan_free(row: tuple) -> tuple:
    return tuple("NaN" if value != value else value for value in row)


@pytest.mark.parametrize("name", REFUSED)
def test_contam_sql_refuses_the_same_statements_through_the_host(contam, hosted, tmp_path, name):
    path, _ = hosted
    before = sorted(tmp_path.rglob("*"))
    status, out, err = contam("sql", "--store", path, REFUSED[name].format(dir=tmp_path))
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("contam sql: refused:")
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize("name", FILE_AND_NETWORK)
def test_file_and_network_stay_off_through_the_host(contam, hosted, name):
    path, _ = hosted
    status, out, err = contam("sql", "--store", path, FILE_AND_NETWORK[name])
    assert status == 2 and out == "" and "disabled by configuration" in err


@pytest.mark.parametrize("query", ["SELECT nextval('row_seq')", "SELECT * FROM checkpoint()",
                                   "SELECT * FROM (FROM force_checkpoint())"])
def test_a_select_cannot_act_on_the_store_through_the_host(contam, hosted, query):
    path, host = hosted
    sequence = "SELECT last_value FROM duckdb_sequences() WHERE sequence_name = 'row_seq'"
    before = host.store.query(sequence)
    status, out, err = contam("sql", "--store", path, query)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "read-only" in err
    assert host.store.query(sequence) == before


def test_a_bad_query_keeps_duckdbs_whole_message_through_the_host(contam, hosted):
    path, _ = hosted
    status, _, err = contam("sql", "--store", path, "select * from cell")
    assert status == 2 and err.startswith("contam sql: query failed: Catalog Error")
    assert 'Did you mean "cells"?' in err and "^^^^" in err


def test_a_request_without_the_token_is_refused(hosted):
    path, host = hosted
    transport = httpx.HTTPTransport(uds=host.holder.socket)
    with httpx.Client(transport=transport, base_url="http://h") as http:
        for headers in ({}, {"Authorization": "Bearer wrong"},
                        {"Authorization": host.holder.token}):
            assert http.get("/progress", headers=headers).status_code == 401
            assert http.post("/labels", headers=headers, json={"rows": [LABEL]}).status_code == 401
        good = {"Authorization": f"Bearer {host.holder.token}"}
        assert http.get("/health", headers=good).status_code == 200
    assert os.stat(host.holder.socket).st_mode & 0o777 == 0o600
    assert host.store.query("select count(*) from labels where rater = 'human:ann'") == [(0,)]


def test_refused_labels_write_nothing(hosted):
    path, host = hosted
    with pytest.raises(Exception, match="labels refused"):
        append_labels(path, [LABEL, {**LABEL, "colour": "red"}])
    with pytest.raises(Exception, match="labels refused"):
        append_labels(path, [LABEL, {**LABEL, "rater": None}])
    assert host.store.query("select count(*) from labels") == [(0,)]


HOLDER = """
import sys, time
from contam.harness.store import Store
from contam.harness.store.host import StoreHost
store = Store(sys.argv[1])
StoreHost(store, command="run").start()
print("serving", flush=True)
time.sleep(60)
"""


def test_a_killed_holder_leaves_a_stale_file_that_is_ignored(tmp_path):
    path = tmp_path / "s.duckdb"
    new_store(path).close()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert holder.stdout.readline().strip() == "serving"
    assert live_progress(path) == []
    holder.kill()
    holder.wait()
    assert discovery_path(path).exists()  # kill -9 leaves it behind
    assert find_holder(path) is None and live_progress(path) is None
    with reading(path) as reader:
        assert not reader.through_host and reader.count("items") == 0
    assert append_labels(path, [LABEL]) == 1
    with Store(path) as store, StoreHost(store, command="judge"):
        assert find_holder(path).command == "judge"  # the stale file replaced
    assert not discovery_path(path).exists()


def test_a_discovery_file_others_could_read_is_not_trusted(hosted):
    path, host = hosted
    discovery_path(path).chmod(0o644)
    try:
        assert find_holder(path) is None
    finally:
        discovery_path(path).chmod(0o600)
    assert find_holder(path) == host.holder


BUSY = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == "read")
print("open", flush=True)
time.sleep(float(sys.argv[3]))
"""


def hold(path: Path, mode: str, seconds: float) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", BUSY, str(path), mode, str(seconds)],
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "open"
    return process


def test_a_job_waits_for_a_short_reader_and_names_a_long_holder(tmp_path, monkeypatch):
    path = tmp_path / "s.duckdb"
    new_store(path).close()
    reader = hold(path, "read", 0.5)
    with Store(path) as store:  # opened once the reader let go
        assert store.count("items") == 0
    reader.wait()
    monkeypatch.setattr("contam.harness.store.store.LOCK_WAIT_S", 0.3)
    writer = hold(path, "write", 30)
    try:
        with pytest.raises(Exception, match=f"locked by pid {writer.pid} "):
            Store(path)
        with pytest.raises(Exception, match=f"locked by pid {writer.pid} .*which serves no reads"):
            with reading(path):
                pass
        # A discovery file naming the live holder, but nothing answers on its socket: ignored.
        publish(path, Holder(pid=writer.pid, command="run", socket=str(tmp_path / "none.sock")))
        assert live_progress(path) is None
        with pytest.raises(Exception, match=f"locked by pid {writer.pid} \\(contam run, which "
                                            "serves no reads\\)"):
            append_labels(path, [LABEL])
    finally:
        writer.kill()
        writer.wait()


def test_a_reader_moves_to_the_file_when_the_job_finishes_mid_read(tmp_path):
    path = tmp_path / "s.duckdb"
    store = new_store(path)
    store.append("items", [{"item_id": "i0"}])
    host = StoreHost(store, command="run").start()
    with reading(path) as reader:
        assert reader.through_host and reader.count("items") == 1
        host.stop()
        store.close()
        assert reader.count("items") == 1 and not reader.through_host


def test_progress_rows_say_why_a_lane_stopped():
    from contam.harness.engine.counters import LaneStats
    from contam.harness.jobs.live import LiveBoard

    quota = LaneStats(label="gemini-m", total=10, cap=4, done=3, failed=1, retries=5,
                      rate_limited=2, stopped="quota", cooling_for=lambda: 12.34)
    drained = LaneStats(label="openai-m", total=10, cap=8, interrupted=True)
    board = LiveBoard()
    assert board.rows() == []
    board.watch([quota, drained])
    first, second = board.rows()
    assert first == {"model": "gemini-m", "done": 3, "total": 10, "failed": 1, "retries": 5,
                     "rate_limited": 2, "in_flight": 0, "concurrency": 4,
                     "rate_per_s": first["rate_per_s"], "cooling_down_s": 12.3,
                     "stopped": "quota"}
    assert first["rate_per_s"] >= 0 and second["stopped"] == "interrupted"


def test_a_malformed_request_is_a_400_not_a_crash(hosted):
    path, host = hosted
    good = {"Authorization": f"Bearer {host.holder.token}"}
    with httpx.Client(transport=httpx.HTTPTransport(uds=host.holder.socket),
                      base_url="http://h", headers=good) as http:
        for route, body in (("/query", b"not json"), ("/query", b"{}"), ("/labels", b"[1]")):
            answer = http.post(route, content=body)
            assert answer.status_code == 400 and "malformed request" in answer.json()["error"]
        assert http.get("/health").status_code == 200  # still serving


def test_a_reader_idle_past_the_hosts_keep_alive_reads_again(tmp_path, monkeypatch):
    """The host closes an idle reader's connection; the reader's next call opens a new one
    rather than failing on the closed one."""
    from contam.harness.store import host as host_module
    from contam.harness.store.client import HostReader

    monkeypatch.setattr(host_module, "KEEP_ALIVE_S", 0.2)
    path = tmp_path / "store.duckdb"
    with new_store(path) as store, StoreHost(store, command="run") as host, \
            HostReader(path, host.holder) as reader:
        assert reader.query("SELECT 1") == [(1,)]
        wait_for(reader._http.closed_by_host, timeout=10)
        assert reader.query("SELECT 2") == [(2,)]


def test_a_reader_through_the_host_starts_without_importing_an_http_library(tmp_path):
    """A reader beside a running job costs it little CPU to start: the standard library's HTTP
    client, not httpx (whose imports took 0.3 s of a core, at normal priority)."""
    path = tmp_path / "store.duckdb"
    reader = ("import sys\nfrom contam.harness.store.access import reading\n"
              "with reading(sys.argv[1]) as r:\n    print(r.through_host, r.query('SELECT 3'))\n"
              "print(sorted(m for m in ('httpx', 'httpcore', 'trio', 'rich') if m in sys.modules))")
    with new_store(path) as store, StoreHost(store, command="run"):
        done = subprocess.run([sys.executable, "-c", reader, str(path)], cwd=ROOT, text=True,
                              capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["True [(3,)]", "[]"]
