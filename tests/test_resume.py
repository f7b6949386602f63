"""Crash safety of `contam run` as a real process: SIGKILL mid-run then resume, and SIGINT/SIGTERM
draining what is in flight."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.store import Store
from tests.runkit import KEYS, model_entry, question_number, run_inprocess, write_config

ROOT = Path(__file__).resolve().parents[1]
GENERATE_PATHS = {"/v1/chat/completions": "openai-m", "/api/generate": "ollama-m"}


def start_run(config: Path, store: Path) -> subprocess.Popen:
    env = {**os.environ, **KEYS}
    return subprocess.Popen([sys.executable, "-m", "contam.harness.cli", "run", str(config), "--store",
                             str(store), "--no-progress"], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for_requests(emulator, count: int, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(generates(emulator)) < count:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run did not get going"
        time.sleep(0.01)


def generates(emulator) -> list:
    return [r for r in list(emulator.requests) if r.path in GENERATE_PATHS]


def cell(request) -> tuple[str, str]:
    body = request.body
    text = body["messages"][-1]["content"] if "messages" in body else body["prompt"]
    return f"q{question_number(text):04d}", GENERATE_PATHS[request.path]


def test_kill_9_mid_run_then_resume_answers_every_cell_once(tmp_path, monkeypatch):
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    store, items, concurrency = tmp_path / "s.duckdb", 300, 8
    with run_emulator(EmulatorSettings(latency_ms=40)) as emu:
        config = write_config(tmp_path, [model_entry("openai", emu, concurrency=concurrency),
                                         model_entry("ollama", emu, concurrency=concurrency)], items=items)
        process = start_run(config, store)
        wait_for_requests(emu, 250, process)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        asked_before = [cell(r) for r in generates(emu)]
        resumed = run_inprocess(config, store)
        asked_after = [cell(r) for r in generates(emu)[len(asked_before):]]
    assert process.returncode == -signal.SIGKILL and resumed.status == 0, resumed.err
    with Store(store, read_only=True) as opened:
        [(latest, distinct)] = opened.query("SELECT count(*), count(DISTINCT (item_id, model)) FROM latest_answers")
        [(rows, cells)] = opened.query("SELECT count(*), count(DISTINCT (item_id, model)) FROM answers")
        committed = set(opened.query("SELECT item_id, model FROM answers WHERE run_id = "
                                     "(SELECT run_id FROM runs ORDER BY seq LIMIT 1)"))
    assert latest == distinct == cells == 2 * items
    assert rows - cells <= 2 * concurrency  # duplicates: at most the requests in flight at the kill
    assert committed, "the killed run had committed batches"
    assert not committed & set(asked_after)  # no committed cell was asked again
    # Asked twice: only what was in flight or not yet committed at the kill (a commit starts at 50
    # waiting cells, or a tenth of a second's worth when they come faster: a few dozen at most).
    assert len(set(asked_before) & set(asked_after)) <= 2 * concurrency + 100
    assert set(asked_before) | set(asked_after) == {(f"q{i:04d}", m) for i in range(items)
                                                    for m in ("openai-m", "ollama-m")}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_drains_in_flight_requests_and_commits_them(tmp_path, signum):
    store = tmp_path / "s.duckdb"
    with run_emulator(EmulatorSettings(latency_ms=1500)) as emu:
        config = write_config(tmp_path, [model_entry("openai", emu, concurrency=4)], items=40)
        process = start_run(config, store)
        wait_for_requests(emu, 4, process)
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
        asked = generates(emu)
    assert process.returncode == 128 + signum, err
    assert "interrupted" in err and "again to resume" in err
    assert "Traceback" not in err
    with Store(store, read_only=True) as opened:
        answers = opened.count("answers")
        finished = opened.query("SELECT count(*) FROM runs WHERE finished_at IS NOT NULL")[0][0]
    assert len(asked) >= 4 and answers == len(asked)  # every request in flight answered and kept
    assert answers < 40 and finished == 1
    assert "openai-m:" in out and "interrupted with" in out
