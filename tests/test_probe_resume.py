"""`contam probe` as a real process killed with SIGKILL mid-probe, then resumed: the resumed probe
asks exactly the samples the store lacks (counted in the emulator's requests, ``n`` included), and
every cell ends complete and scored. And ``--batch``: the same request bodies as batch lines,
kept apart from a run's batch jobs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contam.harness.engine.batch_lane import BatchOptions, open_job_count
from contam.harness.config import load_config
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.jobs.probe import make_probe
from contam.harness.jobs.probe_work import ProbePlan, missing_count
from contam.harness.store import Store
from tests.probekit import asked_samples, demo_config, generate_calls, model_entry, probe_inprocess
from tests.runkit import KEYS

ROOT = Path(__file__).resolve().parents[1]


def start_probe(config: Path, store: Path) -> subprocess.Popen:
    env = {**os.environ, **KEYS}
    return subprocess.Popen([sys.executable, "-m", "contam.harness.cli", "probe", "cdd", str(config),
                             "--store", str(store), "--no-progress", "--samples", "10"],
                            cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def wait_for_requests(emulator, count: int, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(generate_calls(emulator)) < count:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the probe did not get going"
        time.sleep(0.01)


def missing(config_path: Path, store_path: Path) -> int:
    """Samples the store lacks; opening it writable replays the killed probe's journal first."""
    config = load_config(config_path)
    with Store(store_path, create=True) as store:
        plan = ProbePlan.build(store, make_probe("cdd", config, {"samples": 10}), None)
        return sum(missing_count(store, plan, spec) for spec in config.models)


def test_kill_9_mid_probe_then_resume_asks_exactly_the_missing_samples(tmp_path, monkeypatch):
    """~10 s: a real process (its imports alone take seconds) killed mid-probe."""
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    store = tmp_path / "s.duckdb"
    with run_emulator(EmulatorSettings(latency_ms=30)) as emu:
        config = demo_config(tmp_path, [model_entry("openai", emu, concurrency=4),
                                        model_entry("anthropic", emu, concurrency=4)])
        process = start_probe(config, store)
        wait_for_requests(emu, 60, process)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        left = missing(config, store)
        assert 0 < left < 2 * 18 * 11
        start = len(emu.requests)
        resumed = probe_inprocess(config, store, parameters={"samples": 10})
        asked = sum(asked_samples(call) for call in generate_calls(emu, start))
    assert resumed.status == 0, resumed.err
    assert asked == left
    with Store(store, read_only=True) as opened:
        assert opened.query("SELECT count(*), count(DISTINCT (item_id, model, variant, sample)) "
                            "FROM probe_samples")[0] == (2 * 18 * 11, 2 * 18 * 11)
        assert opened.query("SELECT count(*) FROM latest_probe_scores WHERE metric = 'flagged'")[0][0] == 36


@pytest.mark.usefixtures("keys")
def test_batch_sends_the_same_bodies_and_keeps_its_jobs_apart_from_a_runs(tmp_path, emulator):
    emu = emulator()
    config = demo_config(tmp_path, [model_entry("openai", emu), model_entry("gemini", emu),
                                    model_entry("anthropic", emu)])
    options = BatchOptions(poll_initial_s=0.05, poll_max_s=0.1)
    run = probe_inprocess(config, tmp_path / "s.duckdb", limit=2, parameters={"samples": 10},
                          batch=True, batch_options=options)
    assert run.status == 0, run.err
    assert generate_calls(emu) == []  # nothing went the synchronous way
    counts = emu.batch_line_counts
    assert sum(counts.values()) == 2 * (2 + 3 + 11)  # openai n=10; gemini 8 + 2; anthropic 1 each
    with Store(tmp_path / "s.duckdb", create=True) as store:
        assert store.count("probe_samples") == 3 * 2 * 11
        assert store.query("SELECT DISTINCT purpose FROM batches")[0][0].startswith("probe:cdd:")
        assert store.query("SELECT count(*) FROM batch_cells WHERE variant = 'sample'")[0][0] == 2 * (1 + 2 + 10)
        spec = load_config(config).models[0]
        assert open_job_count(store, spec) == 0  # a `contam run` finds no job of its own
    assert run.result.cells_scored == 6
