"""`contam bench`: the documented report, against an emulator child process (--emulator) and against
an in-process emulator named by a config; probes are stateless question requests and never reach
a study's store. Smoke tests: no timing is asserted (the figures are scripts' business)."""

from __future__ import annotations

import orjson
import pytest

from contam.harness.cli import main as contam
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.jobs.bench import EMULATOR_KEY_ENV, PROBE_QUESTION, PROBE_TITLE
from contam.harness.prompts import DEFAULT_SYSTEM_PROMPT
from contam.harness.store import Store
from tests.runkit import model_entry, write_config

MODEL_KEYS = {"model", "provider", "requests", "ok", "rate_limited", "failed", "retries", "wall_s",
              "requests_per_s", "latency_p50_s", "latency_p95_s", "latency_p99_s", "achieved_rpm",
              "rpm_limit", "rpm_ratio", "server_rpm_ratio", "concurrency", "stopped", "stop_message"}
HARNESS_KEYS = {"requests", "ok", "wall_s", "cpu_s", "cpu_per_request_ms", "peak_rss_mb",
                "latency_floor_s", "wall_over_floor"}
FLOOR_KEYS = {"client", "requests", "ok", "wall_s", "cpu_s", "cpu_per_request_ms",
              "wall_over_floor", "cpu_ratio", "wall_ratio"}
MACHINE_KEYS = {"cpus", "cpu_model", "python", "platform", "load_avg_before", "load_avg_after"}


@pytest.fixture(autouse=True)
def bench_keys(keys, monkeypatch):
    monkeypatch.setenv(EMULATOR_KEY_ENV, "bench-test-key")


def bench_json(capsys, *argv: str) -> dict:
    status = contam(["bench", *argv, "--format", "json"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return orjson.loads(captured.out)


def test_bench_emulator_json_has_the_documented_keys(capsys):
    report = bench_json(capsys, "--emulator", "--requests", "50")
    assert report["mode"] == "emulator" and report["store"] is None
    assert set(report["machine"]) == MACHINE_KEYS and report["machine"]["cpus"] >= 1
    assert report["settings"]["requests"] == 50 and report["settings"]["concurrency"] == 32
    assert [m["provider"] for m in report["models"]] == ["openai", "gemini", "anthropic", "ollama"]
    for model in report["models"]:
        assert set(model) == MODEL_KEYS
        assert (model["requests"], model["ok"], model["failed"], model["stopped"]) == (50, 50, 0, None)
        assert 0 < model["latency_p50_s"] <= model["latency_p95_s"] <= model["latency_p99_s"]
    harness, floor = report["harness"], report["floor"]
    assert set(harness) == HARNESS_KEYS and set(floor) == FLOOR_KEYS
    assert harness["ok"] == floor["ok"] == harness["requests"] == floor["requests"] == 200
    assert harness["latency_floor_s"] == 2.0  # ceil(50 / 32) x 1 s
    assert harness["cpu_s"] > 0 and floor["cpu_s"] > 0 and floor["cpu_ratio"] > 0
    assert set(report["emulator_cpu_s"]) == {"harness_phase", "bare_phase"}


def test_bench_config_probes_every_model_statelessly_against_an_emulator(tmp_path, capsys):
    with run_emulator(EmulatorSettings(latency_ms=5)) as emu:
        config = write_config(tmp_path, [model_entry("openai", emu, rpm=6000),
                                         model_entry("anthropic", emu, concurrency=2)], items=3)
        report = bench_json(capsys, str(config), "--requests", "12")
        requests = [r for r in emu.requests if r.method == "POST"]
    assert report["mode"] == "config" and report["floor"] is None
    by_model = {m["model"]: m for m in report["models"]}
    assert set(by_model) == {"openai-m", "anthropic-m"}
    assert by_model["openai-m"]["rpm_limit"] == 6000 and by_model["openai-m"]["rpm_ratio"] > 0
    assert by_model["anthropic-m"]["rpm_limit"] is None and by_model["anthropic-m"]["concurrency"] == 2
    assert all(m["ok"] == 12 and m["failed"] == 0 and set(m) == MODEL_KEYS for m in by_model.values())
    assert len(requests) == 24  # N per model, nothing else
    for request in requests:  # R1/R2: the probe question alone, no tools, no history
        body = request.body
        assert not any("tool" in key for key in body)
        user = [m for m in body["messages"] if m["role"] == "user"]
        assert len(user) == 1 and user[0]["content"] == f"Game: {PROBE_TITLE}\nQuestion: {PROBE_QUESTION}"
        system = body.get("system") or body["messages"][0]["content"]
        assert system == DEFAULT_SYSTEM_PROMPT
    assert not (tmp_path / "runs").exists()  # the config names no store; a temporary one was used


def test_a_named_bench_store_keeps_bench_runs_and_a_study_store_is_refused(tmp_path, capsys):
    with run_emulator(EmulatorSettings()) as emu:
        config = write_config(tmp_path, [model_entry("ollama", emu)], items=3)
        bench_store = tmp_path / "bench.duckdb"
        report = bench_json(capsys, str(config), "--requests", "5", "--store", str(bench_store))
        assert contam(["import", "items", str(tmp_path / "items.csv"), "--store",
                       str(tmp_path / "study.duckdb")]) == 0
        capsys.readouterr()
        refused = contam(["bench", str(config), "--requests", "5", "--store",
                          str(tmp_path / "study.duckdb")])
        err = capsys.readouterr().err
    assert report["store"] == str(bench_store)
    with Store(bench_store, read_only=True) as store:
        assert store.query("SELECT DISTINCT kind FROM runs") == [("bench",)]
        assert store.count("answers") == 5 and store.count("attempts") == 5
    assert refused == 2 and "holds a study" in err
    with Store(tmp_path / "study.duckdb", read_only=True) as study:
        assert study.count("answers") == 0 and study.count("runs") == 0


def test_the_table_format_prints_every_model_and_the_summary(tmp_path, capsys):
    with run_emulator(EmulatorSettings()) as emu:
        config = write_config(tmp_path, [model_entry("gemini", emu)], items=3)
        status = contam(["bench", str(config), "--requests", "4", "--no-progress"])
    out = capsys.readouterr().out
    assert status == 0
    assert "gemini-m" in out and "p95 s" in out and "harness: 4/4 answered" in out


@pytest.mark.parametrize("argv, message", [
    ([], "either a CONFIG file or --emulator"),
    (["run.toml", "--emulator"], "either a CONFIG file or --emulator"),
    (["run.toml", "--latency-ms", "5"], "apply to --emulator only"),
    (["--emulator", "--requests", "0"], "--requests must be a positive number"),
])
def test_bad_arguments_are_one_line_errors(argv, message, capsys):
    assert contam(["bench", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
