"""`contam run` end to end over real loopback sockets against the emulator: hints and cool-downs,
retries, stops, resume, --limit/--models, and keys that never leak."""

from __future__ import annotations

import logging

import pytest

from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.store import Store
from tests.runkit import (
    KEYS,
    Recorder,
    model_entry,
    question_number,
    run_inprocess,
    store_text,
    write_config,
)


pytestmark = pytest.mark.usefixtures("keys")


def query(store_path, sql):
    with Store(store_path, read_only=True) as store:
        return store.query(sql)


def answered(store_path, model):
    return {row[0] for row in query(store_path, f"SELECT item_id FROM latest_answers WHERE model = '{model}'")}


def outcomes(store_path, model, item_id):
    return [row[0] for row in query(
        store_path, f"SELECT outcome FROM attempts WHERE model = '{model}' AND item_id = '{item_id}' "
                    "ORDER BY seq")]


def test_happy_path_writes_answers_attempts_and_two_run_rows(tmp_path):
    with run_emulator(EmulatorSettings(latency_ms=5)) as emu:
        config = write_config(tmp_path, [model_entry(p, emu) for p in
                                         ("openai", "gemini", "anthropic", "ollama")], items=6)
        result = run_inprocess(config, tmp_path / "s.duckdb")
    assert result.status == 0, result.err
    store = tmp_path / "s.duckdb"
    rows = query(store, "SELECT model, provider, provider_model, served_model, answer_raw, answer, "
                        "latency_s FROM answers ORDER BY model, item_id")
    assert len(rows) == 24
    for model, provider, provider_model, served, raw, answer, latency in rows:
        assert model == f"{provider}-m" and provider_model == f"emu-{provider}"
        assert served.startswith(f"emu-{provider}")
        assert raw.startswith("Emulated answer") and answer == raw.strip() and latency > 0
    assert query(store, "SELECT DISTINCT outcome FROM attempts") == [("ok",)]
    runs = query(store, "SELECT run_id, kind, started_at, finished_at, prompt_sha256, config FROM runs ORDER BY seq")
    assert len(runs) == 2 and runs[0][0] == runs[1][0] and runs[0][1] == "run"
    assert runs[0][3] is None and runs[1][3] >= runs[1][2]
    assert len(runs[0][4]) == 64 and '"models"' in runs[0][5]
    assert "ollama-m: Ollama" in result.out  # the preflight's report
    assert "openai-m: 6/6 answered" in result.out


def test_retry_after_pauses_the_whole_lane_and_only_that_lane(tmp_path):
    recorder = Recorder()
    with run_emulator(EmulatorSettings(latency_ms=40, script=["429:1.2"])) as emu:
        config = write_config(tmp_path, [model_entry("openai", emu, concurrency=3),
                                         model_entry("anthropic", emu, concurrency=3)], items=12)
        result = run_inprocess(config, tmp_path / "s.duckdb", provider_factory=recorder.factory)
    assert result.status == 0, result.err
    [(lane, limited_at, hint)] = recorder.limited
    assert hint == pytest.approx(1.2)
    later = [t for t in recorder.sends(lane) if t > limited_at]
    assert later, "the 429'd request was retried"
    assert min(later) - limited_at >= hint  # nothing of that lane went out during the cool-down
    other = "anthropic-m" if lane == "openai-m" else "openai-m"
    assert any(limited_at < t < limited_at + hint for t in recorder.sends(other))  # others go on
    assert len(answered(tmp_path / "s.duckdb", lane)) == 12
    row = query(tmp_path / "s.duckdb", "SELECT http_status, retry_after_s FROM attempts "
                                       "WHERE outcome = 'rate_limited'")
    assert row == [(429, pytest.approx(1.2))]


def test_gemini_retry_info_with_fractional_seconds(tmp_path):
    recorder = Recorder()
    with run_emulator(EmulatorSettings(latency_ms=30, script=["429:0.75"])) as emu:
        config = write_config(tmp_path, [model_entry("gemini", emu, concurrency=3)], items=9)
        result = run_inprocess(config, tmp_path / "s.duckdb", provider_factory=recorder.factory)
    assert result.status == 0, result.err
    [(_, limited_at, hint)] = recorder.limited
    assert hint == pytest.approx(0.75)
    later = [t for t in recorder.sends("gemini-m") if t > limited_at]
    assert later and min(later) - limited_at >= 0.75
    assert len(answered(tmp_path / "s.duckdb", "gemini-m")) == 9


@pytest.mark.parametrize("faults", [["500", "529"], ["reset", "malformed"]])
def test_transient_failures_then_success(tmp_path, faults):
    with run_emulator(EmulatorSettings(script=faults)) as emu:
        config = write_config(tmp_path, [model_entry("anthropic", emu, concurrency=1)], items=3)
        result = run_inprocess(config, tmp_path / "s.duckdb")
    assert result.status == 0, result.err
    assert outcomes(tmp_path / "s.duckdb", "anthropic-m", "q0000") == ["transient", "transient", "ok"]
    assert len(answered(tmp_path / "s.duckdb", "anthropic-m")) == 3
    statuses = query(tmp_path / "s.duckdb", "SELECT http_status FROM attempts WHERE outcome = 'transient' ORDER BY seq")
    if faults == ["500", "529"]:
        assert statuses == [(500,), (529,)]


def test_a_hang_past_the_timeout_is_a_timeout_attempt(tmp_path):
    with run_emulator(EmulatorSettings(script=["hang"], hang_s=5)) as emu:
        config = write_config(tmp_path, [model_entry("ollama", emu, concurrency=1, timeout_s=0.3)], items=2)
        result = run_inprocess(config, tmp_path / "s.duckdb")
    assert result.status == 0, result.err
    assert outcomes(tmp_path / "s.duckdb", "ollama-m", "q0000") == ["timeout", "ok"]


def test_exhausted_attempts_are_failed_rows_and_the_next_run_asks_again(tmp_path):
    store = tmp_path / "s.duckdb"
    with run_emulator(EmulatorSettings(script=["500", "503"])) as emu:
        config = write_config(tmp_path, [model_entry("openai", emu, concurrency=1, max_attempts=2)], items=4)
        first = run_inprocess(config, store)
        asked_first = len(emu.requests)
        second = run_inprocess(config, store)
        asked_second = len(emu.requests) - asked_first
    assert first.status == 1  # a cell that failed after all attempts is a run that did not finish
    assert "1 failed after all attempts" in first.out
    assert "openai-m: 1 failed — Transient: " in first.out and "HTTP 503" in first.out
    assert "1 cell(s) failed after all attempts" in first.err
    assert outcomes(store, "openai-m", "q0000")[:2] == ["transient", "transient"]
    assert "q0000" not in {row[0] for row in query(store, "SELECT item_id FROM answers WHERE run_id = "
                                                          "(SELECT run_id FROM runs ORDER BY seq LIMIT 1)")}
    assert asked_first == 5 and asked_second == 1  # the failed item only
    assert second.status == 0 and answered(store, "openai-m") == {f"q{i:04d}" for i in range(4)}
    assert outcomes(store, "openai-m", "q0000") == ["transient", "transient", "ok"]


def test_daily_quota_stops_that_lane_only(tmp_path):
    store = tmp_path / "s.duckdb"
    with run_emulator(EmulatorSettings(quota_per_day=3)) as limited, run_emulator() as free:
        config = write_config(tmp_path, [model_entry("gemini", limited, concurrency=1),
                                         model_entry("openai", free)], items=8)
        result = run_inprocess(config, store)
        quota_requests = len(limited.requests)
    assert result.status == 1
    assert len(answered(store, "gemini-m")) == 3 and len(answered(store, "openai-m")) == 8
    assert quota_requests == 4  # three answers, one quota refusal, no retries burnt
    assert "gemini-m: 3/8 answered; STOPPED: the day's quota is used up, run again later" in result.out
    assert "openai-m: 8/8 answered" in result.out
    assert outcomes(store, "gemini-m", "q0003") == ["quota"]


def test_served_model_substitution_stops_the_lane_and_writes_no_answer(tmp_path):
    store = tmp_path / "s.duckdb"
    with run_emulator(EmulatorSettings(served_model="cheaper-model")) as swapped, run_emulator() as honest:
        config = write_config(tmp_path, [model_entry("anthropic", swapped),
                                         model_entry("openai", honest)], items=5)
        result = run_inprocess(config, store)
    assert result.status == 1
    assert answered(store, "anthropic-m") == set() and len(answered(store, "openai-m")) == 5
    line = next(line for line in result.out.splitlines() if line.startswith("anthropic-m:"))
    assert "STOPPED (substitution)" in line and "'emu-anthropic'" in line and "'cheaper-model'" in line
    assert {row[0] for row in query(store, "SELECT outcome FROM attempts WHERE model = 'anthropic-m'")} == {"fatal"}


def test_missing_key_stops_that_lane_before_any_request(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    store = tmp_path / "s.duckdb"
    with run_emulator() as emu:
        config = write_config(tmp_path, [model_entry("anthropic", emu), model_entry("ollama", emu)], items=4)
        result = run_inprocess(config, store)
        paths = {request.path for request in emu.requests}
    assert result.status == 1
    assert "/v1/messages" not in paths and "/api/generate" in paths
    assert "anthropic-m: 0/4 answered; STOPPED (missing key)" in result.out
    assert "ANTHROPIC_API_KEY" in result.out
    assert len(answered(store, "ollama-m")) == 4


def test_unauthorised_key_is_fatal_and_stops_the_lane(tmp_path):
    store = tmp_path / "s.duckdb"
    settings = EmulatorSettings(api_keys=frozenset({"the-right-key"}))
    with run_emulator(settings) as emu:
        config = write_config(tmp_path, [model_entry("openai", emu, concurrency=2, max_attempts=5)], items=10)
        result = run_inprocess(config, store)
        sent = len(emu.requests)
    assert result.status == 1
    assert "STOPPED (auth)" in result.out and answered(store, "openai-m") == set()
    assert sent <= 2  # the requests already in flight, no retries, nothing after the stop
    assert {row[0] for row in query(store, "SELECT http_status FROM attempts")} == {401}


def test_the_key_never_reaches_the_store_the_output_or_the_logs(tmp_path, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    store = tmp_path / "s.duckdb"
    wrong = EmulatorSettings(api_keys=frozenset({"other"}), script=["429:0.05", "500"])
    with run_emulator(wrong) as emu:
        config = write_config(tmp_path, [model_entry(p, emu, concurrency=2)
                                         for p in ("openai", "gemini", "anthropic")], items=4)
        result = run_inprocess(config, store)
        headers = " ".join(str(request.headers) for request in emu.requests)
    assert result.status == 1
    assert all(key in headers for key in KEYS.values())  # the keys did travel, in headers
    captured = capfd.readouterr()
    seen = "\n".join([store_text(store), result.out, result.err, caplog.text, captured.out, captured.err])
    assert "STOPPED" in seen
    for key in KEYS.values():
        assert key not in seen


def test_resume_asks_only_the_missing_cells(tmp_path):
    store = tmp_path / "s.duckdb"
    with run_emulator() as emu:
        config = write_config(tmp_path, [model_entry("openai", emu), model_entry("ollama", emu)], items=10)
        first = run_inprocess(config, store, limit=4)
        assert first.status == 0
        assert answered(store, "openai-m") == {f"q{i:04d}" for i in range(4)}
        before = len(emu.requests)
        second = run_inprocess(config, store)
        asked = [question_number(r.body["messages"][-1]["content"]) for r in emu.requests[before:]
                 if r.path == "/v1/chat/completions"]
        third_before = len(emu.requests)
        third = run_inprocess(config, store)
        third_generates = [r for r in emu.requests[third_before:] if r.path == "/api/generate"
                           or r.path == "/v1/chat/completions"]
    assert second.status == 0 and sorted(asked) == list(range(4, 10))
    assert third.status == 0 and third_generates == []
    assert "openai-m: 0/0 answered" in third.out
    assert query(store, "SELECT count(*), count(DISTINCT (item_id, model)) FROM answers") == [(20, 20)]


def test_limit_takes_the_first_items_in_file_order_and_models_selects_lanes(tmp_path):
    store = tmp_path / "s.duckdb"
    with run_emulator() as emu:
        config = write_config(tmp_path, [model_entry("openai", emu), model_entry("gemini", emu)], items=10)
        result = run_inprocess(config, store, models=["gemini-m"], limit=3)
        again = run_inprocess(config, store, models=["gemini-m"], limit=3)
    assert result.status == 0 and again.status == 0
    assert answered(store, "gemini-m") == {"q0000", "q0001", "q0002"}
    assert answered(store, "openai-m") == set()
    assert "openai-m" not in result.out


def test_cli_run_uses_the_config_store_and_reports_per_model(tmp_path, contam, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with run_emulator() as emu:
        config = write_config(tmp_path, [model_entry("ollama", emu)], items=3, store="from-config.duckdb")
        status, out, err = contam("run", config, "--no-progress")
    assert status == 0, err
    assert "ollama-m: 3/3 answered" in out
    assert len(answered(tmp_path / "from-config.duckdb", "ollama-m")) == 3


def test_cli_refuses_an_unknown_model_and_a_bad_limit(tmp_path, contam):
    with run_emulator() as emu:
        config = write_config(tmp_path, [model_entry("ollama", emu)], items=3)
        status, _, err = contam("run", config, "--store", tmp_path / "s.duckdb", "--models", "nope")
        assert status == 2 and "nope" in err
        status, _, err = contam("run", config, "--store", tmp_path / "s.duckdb", "--limit", "0")
        assert status == 2 and "--limit" in err


@pytest.mark.parametrize("hint", ["1000000000", "601"])
def test_a_hint_beyond_max_hint_s_stops_the_lane_like_a_quota(tmp_path, hint):
    store = tmp_path / "s.duckdb"
    with run_emulator(EmulatorSettings(script=[f"429:{hint}"])) as limited, run_emulator() as free:
        config = write_config(tmp_path, [model_entry("openai", limited, concurrency=1),
                                         model_entry("ollama", free)], items=4)
        first = run_inprocess(config, store)
        asked_by_first = len(limited.requests)
        second = run_inprocess(config, store)
    # The lane stopped at the hint rather than waited it out and asked again: one request, counted.
    assert first.status == 1 and asked_by_first == 1
    line = next(line for line in first.out.splitlines() if line.startswith("openai-m: 0/4"))
    assert line.startswith("openai-m: 0/4 answered; STOPPED (wait too long)")
    assert f"asks to wait {float(hint):,.0f} s, more than max_hint_s = 600 s" in line
    assert "running `contam run` again later resumes it" in line
    assert "ollama-m: 4/4 answered" in first.out
    assert query(store, "SELECT outcome, retry_after_s FROM attempts WHERE model = 'openai-m' "
                        "ORDER BY seq LIMIT 1") == [("rate_limited", float(hint))]
    assert second.status == 0 and len(answered(store, "openai-m")) == 4  # resumed


def test_cli_run_exits_non_zero_and_names_the_cause_when_cells_fail(tmp_path, contam):
    # (A server that refuses connections is left out by its preflight: test_preflight.py.)
    with run_emulator() as emu, run_emulator(EmulatorSettings(faults={"500": 1.0})) as broken:
        config = write_config(tmp_path, [model_entry("openai", broken, name="gpt", max_attempts=1),
                                         model_entry("ollama", emu)], items=3)
        status, out, err = contam("run", config, "--store", tmp_path / "s.duckdb", "--no-progress")
    assert status == 1
    assert "gpt: 3 failed — Transient: openai model 'gpt': HTTP 500: " in out
    assert "ollama-m: 3/3 answered" in out
    assert "3 cell(s) failed after all attempts" in err


def test_cli_run_reports_a_missing_key_once_and_runs_the_others(tmp_path, contam, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with run_emulator() as emu:
        config = write_config(tmp_path, [model_entry("openai", emu), model_entry("ollama", emu)],
                              items=3)
        status, out, err = contam("run", config, "--store", tmp_path / "s.duckdb", "--no-progress")
        paths = {request.path for request in emu.requests}
    assert status == 1
    assert "/v1/chat/completions" not in paths
    notices = [line for line in out.splitlines() if "OPENAI_API_KEY" in line]
    assert notices[0].startswith("openai-m: STOPPED (missing key)")  # before the run, once
    assert notices[1].startswith("openai-m: 0/3 answered; STOPPED (missing key)")  # the summary
    assert len(notices) == 2 and "ollama-m: 3/3 answered" in out


def test_a_model_stopped_for_its_missing_key_says_what_to_fix_not_to_run_again(tmp_path, contam,
                                                                             monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with run_emulator() as emu:
        alone = write_config(tmp_path, [model_entry("openai", emu)], items=2)
        status, _, err = contam("run", alone, "--store", tmp_path / "a.duckdb", "--no-progress")
    assert status == 1 and "again to resume" not in err and "others" not in err
    assert "contam run: openai-m stopped (missing key): " in err
    assert "OPENAI_API_KEY is not set; fix that, then run `contam run" in err


def test_a_local_model_not_on_disk_says_what_to_fix_not_to_run_again(tmp_path, contam):
    local = {"name": "loc", "provider": "local", "model": "no-such/model-anywhere"}
    config = write_config(tmp_path, [local], items=2)
    status, _, err = contam("run", config, "--store", tmp_path / "s.duckdb", "--no-progress")
    assert status == 1 and "again to resume" not in err
    assert "contam run: loc stopped (fatal): local model 'no-such/model-anywhere' is not on disk" in err
    assert "; fix that, then run `contam run" in err


def test_the_resume_line_says_the_others_finished_only_where_there_are_others(tmp_path, contam):
    with run_emulator(EmulatorSettings(quota_per_day=1)) as limited, run_emulator() as free:
        alone = write_config(tmp_path, [model_entry("gemini", limited, concurrency=1)], items=2)
        status, _, err = contam("run", alone, "--store", tmp_path / "a.duckdb", "--no-progress")
        assert status == 1
        assert "contam run: 1 model stopped (gemini-m); run `contam run" in err
        assert "others" not in err and "again to resume" in err
        both = write_config(tmp_path, [model_entry("gemini", limited, concurrency=1),
                                       model_entry("openai", free)], items=2)
        status, _, err = contam("run", both, "--store", tmp_path / "b.duckdb", "--no-progress")
    assert "contam run: 1 model stopped (gemini-m); the others finished; run" in err


def test_a_second_pass_is_on_the_display_and_the_live_board_while_it_runs(store):
    """`--batch-fallback sync`'s lanes (a second pass) were added to the display and the store
    host's board only after they had finished: never seen while they ran."""
    from io import StringIO

    import anyio
    from rich.console import Console

    from contam.harness.config import ModelSpec
    from contam.harness.engine.lanes import Lane, Task
    from contam.harness.jobs.lane_job import JobOptions, JobResult, run_lanes, run_row
    from contam.harness.jobs.live import LiveBoard
    from contam.providers.base import Provider, Reply, Request

    board, seen, display = LiveBoard(), {}, []

    class Peeking(Provider):
        """Notes, while it answers, which lanes the board and the display show."""

        def __init__(self, spec: ModelSpec) -> None:
            self.spec = spec

        async def generate(self, request: Request) -> Reply:
            seen[self.spec.name] = ([row["model"] for row in board.rows()],
                                    [lane.label for lane in display[0].lanes] if display else None)
            return Reply(text="a", served_model=self.spec.model)

    def lane(name: str) -> Lane:
        spec = ModelSpec(name=name, provider="openai", model="m")
        return Lane(spec=spec, total=1, tasks=[Task(item_id="i", model=name,
                                                    request=Request(system="", user="q"))])

    def second_pass(notify):
        display.append(notify.__self__)  # the display's note: the display itself
        return [lane("second")]

    options = JobOptions(no_progress=True, console=Console(file=StringIO()), live=board,
                         handle_signals=False, provider_factory=lambda spec, _: Peeking(spec))
    anyio.run(lambda: run_lanes(store, [lane("first")], result=JobResult(command="run", run_id="r"),
                                accept=lambda *_: {}, started=run_row("r", "run", {}, "sha"),
                                options=options, then=second_pass))
    assert seen == {"first": (["first"], None), "second": (["first", "second"], ["first", "second"])}
