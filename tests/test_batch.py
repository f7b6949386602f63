"""`contam run --batch` against the loopback emulator's three batch APIs: same answers as the
synchronous path, byte-identical request bodies, follow-ups, resuming without paying twice."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import httpx
import pytest

from contam.harness.config import ModelSpec
from contam.harness.engine.batch_lane import BatchLane, BatchOptions
from contam.harness.prompts import question_request
from contam.harness.store import Store
from contam.providers.batch import BatchLine, JobLimits, create_batch_protocol, split_lines
from contam.providers.registry import create_provider
from tests.runkit import KEYS, model_entry, run_inprocess, store_text, write_config

PROVIDERS = ("openai", "anthropic", "gemini")
FAST = BatchOptions(poll_initial_s=0.02, poll_max_s=0.1)

pytestmark = pytest.mark.usefixtures("keys")


def _config(folder: Path, emu, *, items: int = 12, **overrides) -> Path:
    return write_config(folder, [model_entry(p, emu, **overrides) for p in PROVIDERS], items=items)


def _answers(store_path: Path) -> dict[tuple[str, str], tuple[str, str, int, int]]:
    with Store(store_path, read_only=True) as store:
        rows = store.query("SELECT item_id, model, answer_raw, answer, input_tokens, output_tokens "
                           "FROM latest_answers")
    return {(item, model): rest for item, model, *rest in rows}


def _creates(emu) -> int:
    """Jobs the emulator was asked to create (each one paid for)."""
    return sum(1 for r in emu.requests if r.method == "POST" and (
        r.path in ("/v1/batches", "/v1/messages/batches") or r.path.endswith(":batchGenerateContent")))


def test_batch_run_gives_the_synchronous_answers(tmp_path, emulator) -> None:
    emu = emulator(batch_processing_s=1.0)
    config = _config(tmp_path, emu)
    sync = run_inprocess(config, tmp_path / "sync.duckdb")
    batch = run_inprocess(config, tmp_path / "batch.duckdb", batch=True, batch_options=FAST)
    assert _creates(emu) == 3  # one job per model
    assert (sync.status, batch.status) == (0, 0), batch.err
    assert len(_answers(tmp_path / "batch.duckdb")) == 36
    assert not any(key in store_text(tmp_path / "batch.duckdb") for key in KEYS.values())
    assert _answers(tmp_path / "batch.duckdb") == _answers(tmp_path / "sync.duckdb")
    with Store(tmp_path / "batch.duckdb", read_only=True) as store:
        assert store.query("SELECT count(*) FROM attempts WHERE outcome = 'ok'") == [(36,)]
        jobs = store.query("SELECT provider, status, cells, succeeded FROM latest_batches ORDER BY 1")
    assert jobs == [("anthropic", "imported", 12, 12), ("gemini", "imported", 12, 12),
                    ("openai", "imported", 12, 12)]
    assert "openai-m (batch): 12/12 answered" in batch.out
    # each poll shows the job: status, counts, age, next poll
    assert re.search(r"openai-m: batch batch_\w+ in_progress: 0/12 done, 0 failed, age \d+s, "
                     r"next poll in \d+s", batch.out)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_batch_line_body_is_the_synchronous_body_byte_for_byte(provider, emulator) -> None:
    request = question_request("Answer briefly.", "Pokémon Gold", "Which region follows Johto?",
                               max_output_tokens=64)
    emu = emulator()
    spec = ModelSpec(name="m", provider=provider, model=f"emu-{provider}",
                     base_url=emu.base_url(provider), params={"temperature": 0})

    async def both() -> BatchLine:
        async with httpx.AsyncClient() as client:
            sync_provider = create_provider(spec, client)
            await sync_provider.generate(request)
            protocol = create_batch_protocol(sync_provider, client)
            line = protocol.line("cell-1", request)
            await protocol.submit([line], "contam:test:cell")
            return line

    line = anyio.run(both)
    sent = emu.requests[0].raw_body
    uploaded = emu.requests[-1].raw_body if provider != "openai" else emu.requests[1].raw_body
    assert line.body == sent
    assert sent in uploaded  # the job carries those bytes unchanged


def test_split_lines_honours_requests_and_bytes() -> None:
    lines = [BatchLine(f"id{n}", b"x" * 100) for n in range(10)]
    by_count = list(split_lines(lines, JobLimits(max_requests=4, max_bytes=10**6), overhead=0))
    assert [len(g) for g in by_count] == [4, 4, 2]
    by_bytes = list(split_lines(lines, JobLimits(max_requests=100, max_bytes=350), overhead=0))
    assert [len(g) for g in by_bytes] == [3, 3, 3, 1]
    assert [line for group in by_bytes for line in group] == lines


def test_a_large_model_is_split_into_several_jobs(tmp_path, emulator) -> None:
    options = BatchOptions(poll_initial_s=0.02, poll_max_s=0.1,
                           limits=JobLimits(max_requests=5, max_bytes=10**6))
    emu = emulator()
    result = run_inprocess(_config(tmp_path, emu), tmp_path / "s.duckdb", batch=True,
                           batch_options=options)
    assert _creates(emu) == 9  # 12 cells in jobs of at most 5, per model
    assert result.status == 0
    assert len(_answers(tmp_path / "s.duckdb")) == 36


def test_failed_and_expired_lines_go_into_follow_up_jobs(tmp_path, emulator) -> None:
    emu = emulator(batch_fail_rate=0.25, batch_expire_rate=0.15, seed=7)
    result = run_inprocess(_config(tmp_path, emu, max_attempts=10), tmp_path / "s.duckdb",
                           batch=True, batch_options=FAST)
    counts = dict(emu.batch_line_counts)
    assert result.status == 0, result.out
    assert len(_answers(tmp_path / "s.duckdb")) == 36
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        outcomes = dict(store.query("SELECT outcome, count(*) FROM attempts GROUP BY 1"))
        rounds = store.query("SELECT max(attempt) FROM attempts")[0][0]
    assert outcomes["ok"] == 36 and outcomes["transient"] > 0 and outcomes["expired"] > 0
    assert rounds > 1  # follow-up jobs number their attempts
    # every line the server received is one attempts row: nothing asked without a record
    assert sum(counts.values()) == sum(outcomes.values())


def test_fallback_sync_asks_the_failed_lines_synchronously(tmp_path, emulator) -> None:
    emu = emulator(batch_fail_rate=0.5, seed=3)
    options = BatchOptions(poll_initial_s=0.02, poll_max_s=0.1, fallback="sync")
    result = run_inprocess(_config(tmp_path, emu), tmp_path / "s.duckdb", batch=True,
                           batch_options=options)
    sync_calls = [r for r in emu.requests if r.path.endswith(("/chat/completions", "/messages",
                                                               ":generateContent"))
                  and not r.path.endswith(":batchGenerateContent")]
    assert _creates(emu) == 3
    assert result.status == 0, result.err
    assert len(_answers(tmp_path / "s.duckdb")) == 36
    assert 0 < len(sync_calls) < 36


def test_a_killed_run_resumes_by_polling_and_never_submits_again(tmp_path, emulator) -> None:
    emu = emulator(batch_processing_s=3.0)
    config = _config(tmp_path, emu)
    interrupted = _run_cancelled_once_submitted(config, tmp_path / "s.duckdb")
    assert interrupted and _creates(emu) == 3
    resumed = run_inprocess(config, tmp_path / "s.duckdb", batch=True, batch_options=FAST)
    assert _creates(emu) == 3
    assert set(emu.batch_line_counts.values()) == {1}
    assert resumed.status == 0 and "resuming batch" in resumed.out
    assert len(_answers(tmp_path / "s.duckdb")) == 36


def test_a_run_without_batch_collects_open_jobs_instead_of_asking_again(tmp_path,
                                                                        emulator) -> None:
    emu = emulator(batch_processing_s=3.0)
    config = _config(tmp_path, emu)
    assert _run_cancelled_once_submitted(config, tmp_path / "s.duckdb")
    later = run_inprocess(config, tmp_path / "s.duckdb", batch_options=FAST)  # no --batch
    synchronous = [r for r in emu.requests if r.path.endswith(
        ("/chat/completions", "/v1/messages", ":generateContent"))
        and not r.path.endswith(":batchGenerateContent")]
    assert _creates(emu) == 3 and synchronous == []
    assert later.status == 0 and "still open" in later.out
    assert len(_answers(tmp_path / "s.duckdb")) == 36


def _run_cancelled_once_submitted(config: Path, store_path: Path, jobs: int = 3) -> bool:
    """A batch run cancelled (as a kill would stop it) once ``jobs`` job ids are in the store;
    False if it ended first."""
    import io

    from rich.console import Console

    from contam.harness.config import load_config
    from contam.harness.jobs.importing import import_file
    from contam.harness.jobs.run import RunOptions, execute_run

    loaded = load_config(config)
    options = RunOptions(no_progress=True, console=Console(file=io.StringIO()), batch=True,
                         batch_options=FAST, handle_signals=False)
    sql = "SELECT count(*) FROM latest_batches WHERE job_id IS NOT NULL"

    async def cancelled() -> bool:
        async with anyio.create_task_group() as group:
            async def kill_when_submitted() -> None:
                with anyio.fail_after(60):
                    while store.con.cursor().execute(sql).fetchall()[0][0] < jobs:
                        await anyio.sleep(0.01)
                group.cancel_scope.cancel()

            group.start_soon(kill_when_submitted)
            await execute_run(store, loaded, loaded.models, options)
        return group.cancel_scope.cancel_called

    with Store(store_path, create=True) as store:
        import_file(store, "items", loaded.items)
        return anyio.run(cancelled)


def test_a_job_whose_id_never_reached_the_store_is_found_by_its_tag(tmp_path, monkeypatch,
                                                                      contam, emulator) -> None:
    real_send = BatchLane._send

    async def sent_then_killed(self, job, lines):
        await real_send(self, job, lines)
        raise RuntimeError("killed between the provider's reply and the store's commit")

    emu = emulator(batch_processing_s=0.2)
    config = _config(tmp_path, emu)
    monkeypatch.setattr(BatchLane, "_send", sent_then_killed)
    crashed = run_inprocess(config, tmp_path / "s.duckdb", batch=True, batch_options=FAST)
    assert crashed.status == 1
    assert crashed.out.count("(batch): 0/12 answered; STOPPED (internal error)") == 3
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        assert {r[0] for r in store.query("SELECT status FROM latest_batches")} == {"submitting"}
    status, out, _ = contam("batches", "--store", tmp_path / "s.duckdb", "--provider-jobs")
    assert status == 0
    # the tagged jobs (OpenAI, Gemini) that reached the emulator before the crash
    tagged = sorted(job_id for api, job_id, tag in emu.batch_jobs if tag)
    listed = re.findall(r"not in the store: (?:openai|gemini) job (\S+) \w+ tagged contam:", out)
    assert tagged and sorted(listed) == tagged
    monkeypatch.setattr(BatchLane, "_send", real_send)
    resumed = run_inprocess(config, tmp_path / "s.duckdb", batch=True, batch_options=FAST)
    assert _creates(emu) == 3  # adopted by tag (OpenAI, Gemini) or results (Anthropic), or sent
    assert set(emu.batch_line_counts.values()) == {1}
    assert resumed.status == 0, resumed.out
    assert len(_answers(tmp_path / "s.duckdb")) == 36


def test_a_substituted_model_stops_that_model(tmp_path, emulator) -> None:
    emu = emulator(served_model="emu-impostor")
    result = run_inprocess(_config(tmp_path, emu), tmp_path / "s.duckdb", batch=True,
                           batch_options=FAST)
    assert result.status == 1
    assert "STOPPED (substitution)" in result.out
    assert _answers(tmp_path / "s.duckdb") == {}
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        assert store.query("SELECT DISTINCT outcome FROM attempts") == [("fatal",)]


def test_batches_lists_and_cancels_jobs(tmp_path, contam, emulator) -> None:
    emu = emulator(batch_processing_s=5)
    config = _config(tmp_path, emu)
    store = tmp_path / "s.duckdb"
    assert _run_cancelled_once_submitted(config, store)
    status, out, _ = contam("batches", "--store", str(store))
    assert status == 0 and out.count("submitted") == 0
    with Store(store, read_only=True) as opened:
        job_ids = [r[0] for r in opened.query("SELECT job_id FROM latest_batches ORDER BY 1")]
    assert all(job_id in out for job_id in job_ids) and len(job_ids) == 3
    for job_id in job_ids:
        status, out, err = contam("batches", "cancel", job_id, "--store", str(store))
        assert status == 0 and job_id in out, err
    with Store(store, read_only=True) as opened:
        statuses = {r[0] for r in opened.query("SELECT status FROM latest_batches")}
    assert statuses == {"cancelled", "ended", "BATCH_STATE_CANCELLED"}
    resumed = run_inprocess(config, store, batch=True, batch_options=FAST)
    assert _creates(emu) == 6  # the cancelled jobs' cells went into follow-up jobs
    assert resumed.status == 0, resumed.out
    assert len(_answers(store)) == 36


def test_batches_refuses_a_missing_store_and_a_missing_job_id(tmp_path, contam) -> None:
    status, _, err = contam("batches", "--store", tmp_path / "nope.duckdb")
    assert status == 2 and "no such store" in err and not (tmp_path / "nope.duckdb").exists()
    Store(tmp_path / "s.duckdb", create=True).close()
    status, out, _ = contam("batches", "--store", tmp_path / "s.duckdb")
    assert status == 0 and "no batch jobs in this store" in out
    status, _, err = contam("batches", "cancel", "--store", tmp_path / "s.duckdb")
    assert status == 2 and "needs a job id" in err
    status, _, err = contam("batches", "cancel", "batch_x", "--store", tmp_path / "s.duckdb")
    assert status == 2 and "no batch job 'batch_x'" in err


def test_batch_true_in_config_and_refused_for_other_providers(tmp_path, contam,
                                                               emulator) -> None:
    emu = emulator()
    entries = [model_entry("openai", emu, batch=True), model_entry("ollama", emu)]
    config = write_config(tmp_path, entries, items=4)
    result = run_inprocess(config, tmp_path / "s.duckdb", batch_options=FAST)
    assert _creates(emu) == 1
    assert sum(1 for r in emu.requests if r.path == "/api/generate") == 4
    assert result.status == 0 and len(_answers(tmp_path / "s.duckdb")) == 8
    bad = write_config(tmp_path, [model_entry("ollama", emu, batch=True)], items=1)
    status, _, err = contam("run", str(bad), "--store", str(tmp_path / "t.duckdb"))
    assert status == 2 and "'batch = true' needs a provider with a batch API" in err


def test_cost_compares_synchronous_and_batch_at_given_prices(tmp_path, contam, emulator) -> None:
    emu = emulator()
    run_inprocess(_config(tmp_path, emu), tmp_path / "s.duckdb", batch=True, batch_options=FAST)
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        (tokens_in, tokens_out), = store.query(
            "SELECT sum(input_tokens), sum(output_tokens) FROM answers WHERE model = 'openai-m'")
    status, out, err = contam("cost", "--store", tmp_path / "s.duckdb", "--price", "openai-m=2,8",
                              "--items", "400")
    assert status == 0, err
    row = next(line.split() for line in out.splitlines() if line.startswith("openai-m"))
    expected = (tokens_in * 2 + tokens_out * 8) / 1e6 * 400 / 12
    assert row[1] == "400" and float(row[4]) == pytest.approx(expected, abs=1e-4)
    assert float(row[5]) == pytest.approx(expected / 2, abs=1e-4)
    assert "no --price" in next(line for line in out.splitlines() if line.startswith("gemini-m"))
    status, _, err = contam("cost", "--store", tmp_path / "s.duckdb", "--price", "oops")
    assert status == 2 and "expected MODEL=INPUT,OUTPUT" in err


def test_write_durably_commits_at_once(tmp_path) -> None:
    """A job id must survive a kill the instant after the provider returned it: write_durably
    returns only once its rows are committed, though the writer would gather for seconds."""
    from contam.harness.engine.writer import BatchWriter

    row = {"batch_key": "k1", "model": "m", "status": "submitting"}

    async def scenario(store: Store) -> tuple[int, int]:
        async with BatchWriter(store, max_delay_s=30, min_age_s=30) as writer:
            await writer.write({"batches": [{**row, "batch_key": "k0"}]})
            await writer.write_durably({"batches": [row]})
            visible = store.con.cursor().execute("SELECT count(*) FROM batches").fetchall()[0][0]
            return visible, writer.batches_committed

    with Store(tmp_path / "s.duckdb", create=True) as store:
        assert anyio.run(scenario, store) == (2, 1)


def test_the_config_knows_exactly_the_providers_with_a_batch_protocol() -> None:
    from contam.harness.config import BATCH_PROVIDERS
    from contam.providers.batch import BATCH_PROTOCOLS

    assert set(BATCH_PROVIDERS) == set(BATCH_PROTOCOLS)


def test_an_unreadable_job_reply_stops_that_model_only(tmp_path, monkeypatch, emulator) -> None:
    from contam.providers.openai_batch import OpenAIBatch

    def garbled(self, body):
        raise KeyError("id")

    monkeypatch.setattr(OpenAIBatch, "_state", garbled)
    emu = emulator()
    result = run_inprocess(_config(tmp_path, emu), tmp_path / "s.duckdb", batch=True,
                           batch_options=FAST)
    assert result.status == 1
    assert "openai-m (batch): 0/12 answered; STOPPED (internal error)" in result.out
    assert {model for _, model in _answers(tmp_path / "s.duckdb")} == {"anthropic-m", "gemini-m"}


def test_a_submit_whose_reply_was_lost_is_found_not_sent_again(tmp_path, monkeypatch,
                                                                emulator) -> None:
    """The provider created the job but its reply never came (a timeout): the lane looks the job
    up (by tag, or for Anthropic by its results) before it would submit again."""
    from contam.providers.anthropic_batch import AnthropicBatch
    from contam.providers.base import Timeout
    from contam.providers.gemini_batch import GeminiBatch
    from contam.providers.openai_batch import OpenAIBatch

    for protocol in (OpenAIBatch, AnthropicBatch, GeminiBatch):
        real_submit = protocol.submit

        async def lost_reply(self, lines, tag, real_submit=real_submit):
            await real_submit(self, lines, tag)
            raise Timeout("no reply within 60 s")

        monkeypatch.setattr(protocol, "submit", lost_reply)
    emu = emulator()
    result = run_inprocess(_config(tmp_path, emu), tmp_path / "s.duckdb", batch=True,
                           batch_options=FAST)
    assert _creates(emu) == 3
    assert set(emu.batch_line_counts.values()) == {1}
    assert result.status == 0, result.out
    assert len(_answers(tmp_path / "s.duckdb")) == 36


def test_a_large_gemini_job_goes_as_an_uploaded_file(tmp_path, monkeypatch, emulator) -> None:
    from contam.providers.gemini_batch import GeminiBatch

    monkeypatch.setattr(GeminiBatch, "inline_max_bytes", 1000)  # 12 requests are larger
    emu = emulator()
    config = write_config(tmp_path, [model_entry("gemini", emu)], items=12)
    sync = run_inprocess(config, tmp_path / "sync.duckdb")
    batch = run_inprocess(config, tmp_path / "batch.duckdb", batch=True, batch_options=FAST)
    paths = [r.path for r in emu.requests]
    assert (sync.status, batch.status) == (0, 0), batch.out
    assert paths.count("/upload/v1beta/files") == 2  # start, then upload + finalize
    assert any(p.startswith("/download/v1beta/files/") for p in paths)
    assert _answers(tmp_path / "batch.duckdb") == _answers(tmp_path / "sync.duckdb")
    assert len(_answers(tmp_path / "batch.duckdb")) == 12


def test_lines_failing_every_round_fail_the_run_with_their_cause(tmp_path, emulator) -> None:
    emu = emulator(batch_fail_rate=1.0)
    config = write_config(tmp_path, [model_entry("openai", emu, max_attempts=2)], items=3)
    result = run_inprocess(config, tmp_path / "s.duckdb", batch=True, batch_options=FAST)
    assert _creates(emu) == 2  # the job and one follow-up round
    assert result.status == 1
    assert "openai-m (batch): 0/3 answered, 3 failed after all attempts" in result.out
    assert re.search(r"openai-m \(batch\): 3 failed — \w+: .*HTTP 500.* \(3\)", result.out)
    assert "contam run: 3 cell(s) failed after all attempts" in result.err


def test_a_batch_model_without_its_key_is_refused_before_anything_is_sent(
        tmp_path, monkeypatch, emulator) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    emu = emulator()
    result = run_inprocess(_config(tmp_path, emu), tmp_path / "s.duckdb", batch=True,
                           batch_options=FAST)
    assert result.status == 1
    assert "anthropic-m (batch): 0/12 answered; STOPPED (missing key)" in result.out
    assert not any(r.path.startswith("/v1/messages") for r in emu.requests)
    assert {model for _, model in _answers(tmp_path / "s.duckdb")} == {"openai-m", "gemini-m"}


def test_the_api_runs_batch_mode_and_lists_and_prices_its_jobs(tmp_path, emulator) -> None:
    from contam.harness import api

    emu = emulator()
    store = tmp_path / "s.duckdb"
    config = write_config(tmp_path, [model_entry("gemini", emu)], items=3)
    result = api.run(config, store=store, options=api.RunOptions(
        no_progress=True, batch=True, batch_options=FAST))
    assert result.exit_status == 0 and result.summary[-1] == "gemini-m (batch): 3/3 answered"
    jobs = api.list_batches(store=store)
    assert [(row["model"], row["status"], row["cells"]) for row in jobs.rows] == [
        ("gemini-m", "imported", 3)]
    priced = api.cost(store=store, options=api.CostOptions(prices={"*": (1.0, 1.0)})).costs
    assert [(c.model, c.cells) for c in priced] == [("gemini-m", 3)]
    assert priced[0].batch == pytest.approx(priced[0].sync / 2)


def test_batch_poll_max_must_be_positive(tmp_path, contam, emulator) -> None:
    config = write_config(tmp_path, [model_entry("openai", emulator())], items=1)
    status, _, err = contam("run", config, "--store", tmp_path / "s.duckdb", "--batch",
                            "--batch-poll-max", "0")
    assert status == 2 and "--batch-poll-max must be a positive number" in err


@pytest.mark.parametrize("provider, cursor", [("openai", "after"), ("anthropic", "after_id")])
def test_listing_jobs_follows_every_page(provider, cursor) -> None:
    """Two pages of jobs: the second is asked for with the first page's last id."""
    pages = {None: {"data": [{"id": "b1"}, {"id": "b2"}], "has_more": True, "last_id": "b2"},
             "b2": {"data": [{"id": "b3"}], "has_more": False, "last_id": "b3"}}
    asked = []

    def handler(request: httpx.Request) -> httpx.Response:
        after = request.url.params.get(cursor)
        asked.append(after)
        return httpx.Response(200, json=pages[after])

    spec = ModelSpec(name="m", provider=provider, model=f"emu-{provider}",
                     base_url="http://batch.test/v1" if provider == "openai" else "http://batch.test")

    async def listing() -> list[str]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            protocol = create_batch_protocol(create_provider(spec, client), client)
            return [job.job_id for job in await protocol.list_jobs()]

    assert anyio.run(listing) == ["b1", "b2", "b3"]
    assert asked == [None, "b2"]
