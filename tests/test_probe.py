"""`contam probe cdd` end to end against the loopback emulator: the contaminated profile separates
official from fan and the clean one flags nothing; n / candidateCount are sent and one request
stores its N rows; Anthropic and Ollama send a request per sample; parameters are recorded; a probe
resumes by asking exactly the missing samples; the command line."""

from __future__ import annotations

import shlex

import orjson
import pytest

from contam.harness.emulator.knowledge import Knowledge
from contam.harness.jobs.demo import demo_items_path
from contam.harness.store import Store
from contam.providers.base import Provider, Reply, Request
from contam.providers.registry import create_provider
from tests.probekit import asked_samples, demo_config, generate_calls, model_entry, probe_inprocess


@pytest.fixture(autouse=True)
def _keys(keys):
    return keys


def knowing(profile: str) -> Knowledge:
    return Knowledge.from_file(demo_items_path(), profile=profile, seed=0)


def flagged_share(store_path, model: str) -> dict[str, float]:
    with Store(store_path, read_only=True) as store:
        rows = store.query(
            "SELECT i.subset, avg(s.value) FROM latest_probe_scores s JOIN latest_items i USING (item_id) "
            "WHERE s.probe = 'cdd' AND s.metric = 'flagged' AND s.model = ? GROUP BY 1", [model])
    return dict(rows)


def test_cdd_separates_official_from_fan_on_a_contaminated_model_and_not_on_a_clean_one(
        tmp_path, emulator):
    dirty, clean = emulator(knowledge=knowing("contaminated")), emulator(knowledge=knowing("clean"))
    config = demo_config(tmp_path, [model_entry("openai", dirty, name="dirty"),
                                    model_entry("gemini", clean, name="clean")])
    run = probe_inprocess(config, tmp_path / "s.duckdb")
    assert run.status == 0, run.err
    dirty_share, clean_share = flagged_share(tmp_path / "s.duckdb", "dirty"), flagged_share(
        tmp_path / "s.duckdb", "clean")
    assert dirty_share["official"] >= 0.7 and dirty_share["fan"] == 0.0
    assert clean_share == {"official": 0.0, "fan": 0.0}  # xi = 0.01: not one close sample of 20


def test_openai_sends_n_and_gemini_candidate_count_and_one_request_stores_its_rows(tmp_path, emulator):
    emu = emulator()
    config = demo_config(tmp_path, [model_entry("openai", emu), model_entry("gemini", emu)])
    run = probe_inprocess(config, tmp_path / "s.duckdb", limit=3, parameters={"samples": 20})
    assert run.status == 0, run.err
    calls = generate_calls(emu)
    openai = [asked_samples(c) for c in calls if c.path == "/v1/chat/completions"]
    gemini = [asked_samples(c) for c in calls if c.path.endswith(":generateContent")]
    assert sorted(openai) == [1] * 3 + [20] * 3  # per item: the greedy answer, then n = 20
    assert sorted(gemini) == [1] * 3 + [4] * 3 + [8] * 6  # candidateCount at most 8: 8 + 8 + 4
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        rows = store.query("SELECT model, variant, count(*), count(DISTINCT sample), "
                           "count(output_tokens) FROM probe_samples GROUP BY ALL ORDER BY ALL")
    assert rows == [("gemini-m", "greedy", 3, 1, 3), ("gemini-m", "sample", 60, 20, 9),
                    ("openai-m", "greedy", 3, 1, 3), ("openai-m", "sample", 60, 20, 3)]
    assert run.result.samples_stored == 126 and run.result.cells_scored == 6


@pytest.mark.parametrize("provider", ["anthropic", "ollama"])
def test_apis_without_a_multi_sample_field_send_one_request_per_sample(provider, tmp_path, emulator):
    emu = emulator()
    config = demo_config(tmp_path, [model_entry(provider, emu)])
    run = probe_inprocess(config, tmp_path / "s.duckdb", limit=2, parameters={"samples": 5})
    assert run.status == 0, run.err
    calls = generate_calls(emu)
    assert len(calls) == 2 * 6 and {asked_samples(c) for c in calls} == {1}
    temperatures = sorted(c.body.get("temperature", (c.body.get("options") or {}).get("temperature"))
                          for c in calls)
    assert temperatures == [0.0] * 2 + [0.8] * 10
    assert run.result.samples_stored == 12


def test_parameters_are_recorded_once_and_named_by_the_run(tmp_path, emulator):
    emu = emulator()
    config = demo_config(tmp_path, [model_entry("openai", emu)])
    first = probe_inprocess(config, tmp_path / "s.duckdb", limit=2, parameters={"samples": 4, "xi": 0.2})
    again = probe_inprocess(config, tmp_path / "s.duckdb", limit=2, parameters={"samples": 4, "xi": 0.2})
    assert again.result.samples_stored == 0 and again.result.cells_scored == 0
    assert len(generate_calls(emu)) == 4  # the second run asked nothing
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        (params,) = store.query("SELECT params_sha256, probe, params FROM probe_params")
        runs = store.query("SELECT DISTINCT run_id, config FROM runs WHERE kind = 'probe'")
        scores = store.query("SELECT DISTINCT params_sha256 FROM probe_scores")
    assert params[0] == first.result.params_sha256 == scores[0][0]
    assert orjson.loads(params[2])["samples"] == 4 and orjson.loads(params[2])["xi"] == 0.2
    assert len(runs) == 2 and all(orjson.loads(c)["params_sha256"] == params[0] for _, c in runs)


def test_scores_hold_peakedness_flag_and_the_distances(tmp_path, emulator):
    emu = emulator(knowledge=knowing("contaminated"))
    config = demo_config(tmp_path, [model_entry("openai", emu)])
    assert probe_inprocess(config, tmp_path / "s.duckdb", limit=1).status == 0
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        scores = {m: (v, orjson.loads(d)) for m, v, d in store.query(
            "SELECT metric, value, detail FROM latest_probe_scores WHERE item_id = 'red-01'")}
    value, detail = scores["peakedness"]
    assert len(detail["distances"]) == 20
    assert value == sum(d <= detail["threshold"] for d in detail["distances"]) / 20
    assert scores["flagged"][0] == float(value > 0.01)


def test_failed_requests_leave_samples_missing_and_the_next_run_asks_exactly_those(tmp_path, emulator):
    emu = emulator(script=["500"] * 5)  # the first five requests fail, with one attempt each
    config = demo_config(tmp_path, [model_entry("openai", emu, max_attempts=1, concurrency=1),
                                    model_entry("anthropic", emu, max_attempts=1, concurrency=1)])
    first = probe_inprocess(config, tmp_path / "s.duckdb", limit=3, parameters={"samples": 6})
    missing = sum(first.result.missing.values())
    assert first.status == 1 and missing > 0 and "samples still missing" in first.err
    start = len(emu.requests)
    second = probe_inprocess(config, tmp_path / "s.duckdb", limit=3, parameters={"samples": 6})
    assert second.status == 0, second.err
    assert sum(asked_samples(c) for c in generate_calls(emu, start)) == missing
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        assert store.count("probe_samples") == 2 * 3 * 7
        assert store.query("SELECT count(*) FROM latest_probe_scores WHERE metric = 'flagged'")[0][0] == 6


def test_the_command_that_asks_the_missing_samples_again_quotes_its_parameters(tmp_path, emulator):
    emu = emulator(script=["500"])
    config = demo_config(tmp_path, [model_entry("openai", emu, max_attempts=1, concurrency=1)])
    first = probe_inprocess(config, tmp_path / "s.duckdb", "guided", limit=1,
                            parameters={"dataset": "My Bench", "max_output_tokens": 8})
    assert first.status == 1
    again = first.err.split("`")[1]
    assert shlex.split(again)[-4:] == ["--dataset", "My Bench", "--max-output-tokens", "8"]


class _FewerCompletions(Provider):
    """A server that returns only three completions of however many a request asks for."""

    def __init__(self, inner: Provider) -> None:
        self.inner, self.spec, self.max_samples = inner, inner.spec, inner.max_samples

    async def generate(self, request: Request) -> Reply:
        reply = await self.inner.generate(request)
        if not reply.texts:
            return reply
        return Reply(text=reply.text, served_model=reply.served_model, texts=reply.texts[:3],
                     finish_reasons=reply.finish_reasons[:3])


def test_a_reply_short_of_completions_stores_what_came_and_the_same_run_asks_the_rest(tmp_path, emulator):
    emu = emulator()
    config = demo_config(tmp_path, [model_entry("openai", emu)])
    short = probe_inprocess(config, tmp_path / "s.duckdb", limit=2, parameters={"samples": 10},
                            provider_factory=lambda spec, client: _FewerCompletions(
                                create_provider(spec, client)))
    assert short.status == 0 and short.result.missing == {"openai-m": 0}
    assert "a reply held 3 of the 10 completions asked" in short.out
    # 2 greedy, 2 asking 10 (3 kept each), then the 14 left one by one
    assert sorted(asked_samples(c) for c in generate_calls(emu)) == [1] * 16 + [10, 10]
    start = len(emu.requests)
    again = probe_inprocess(config, tmp_path / "s.duckdb", limit=2, parameters={"samples": 10})
    assert again.status == 0 and generate_calls(emu, start) == []
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        numbers = store.query("SELECT list(sample ORDER BY sample) FROM probe_samples "
                              "WHERE variant = 'sample' GROUP BY item_id")
    assert all(row[0] == list(range(10)) for row in numbers)


class _Blocked(Provider):
    """Gemini blocking every prompt: no candidates, only ``promptFeedback.blockReason``."""

    def __init__(self, inner: Provider) -> None:
        self.inner, self.spec, self.max_samples = inner, inner.spec, inner.max_samples

    async def generate(self, request: Request) -> Reply:
        self.inner.check_samples(request)
        return self.inner.reply_from({"promptFeedback": {"blockReason": "SAFETY"},
                                      "modelVersion": self.inner.served_model_id()})


def test_a_blocked_prompt_is_blank_under_every_sample_number_it_asked(tmp_path, emulator):
    emu = emulator()
    config = demo_config(tmp_path, [model_entry("gemini", emu)])
    blocked = probe_inprocess(config, tmp_path / "s.duckdb", limit=1, parameters={"samples": 10},
                              provider_factory=lambda spec, client: _Blocked(
                                  create_provider(spec, client)))
    assert blocked.status == 0, blocked.err
    assert blocked.result.missing == {"gemini-m": 0} and blocked.result.cells_scored == 1
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        rows = store.query("SELECT variant, list(sample ORDER BY sample), list(DISTINCT text_raw), "
                           "list(DISTINCT finish_reason) FROM probe_samples GROUP BY 1 ORDER BY 1")
    assert rows == [("greedy", [0], [""], ["blocked:SAFETY"]),
                    ("sample", list(range(10)), [""], ["blocked:SAFETY"])]


def test_command_line_probe_with_parameters_and_a_bad_one(tmp_path, emulator, contam):
    emu = emulator()
    config = demo_config(tmp_path, [model_entry("openai", emu)])
    store = tmp_path / "s.duckdb"
    status, out, err = contam("probe", "cdd", config, "--store", store, "--limit", "2",
                              "--samples", "3", "--no-progress")
    assert status == 0, err
    assert "probe cdd" in out and "8 samples stored, 2 cells scored" in out
    status, out, err = contam("probe", "cdd", config, "--store", store, "--xi", "2")
    assert status == 2 and err.count("\n") == 1 and "--xi must be" in err


def test_journal_replay_tells_two_requests_of_one_cell_apart(tmp_path):
    """Two replies of one (run, item, model, attempt 1) that differ in prompt or samples: the
    store has the first; replay adds the second instead of taking it for the first."""
    from contam.harness.store.journal import Journal, journal_path

    store_path = tmp_path / "s.duckdb"
    attempt = {"run_id": "r", "item_id": "i", "model": "m", "attempt": 1, "outcome": "ok"}
    greedy = {"attempts": [{**attempt, "variant": "greedy", "samples": [0]}],
              "probe_samples": [{"probe": "cdd", "params_sha256": "p", "item_id": "i", "model": "m",
                                 "variant": "greedy", "sample": 0, "text": "a"}]}
    sampled = {"attempts": [{**attempt, "variant": "sample", "samples": [0, 1]}],
               "probe_samples": [{"probe": "cdd", "params_sha256": "p", "item_id": "i", "model": "m",
                                  "variant": "sample", "sample": n, "text": "b"} for n in (0, 1)]}
    with Store(store_path, create=True) as store:
        for table, rows in greedy.items():
            store.append(table, rows)
    journal = Journal(journal_path(store_path))
    journal.append(greedy)
    journal.append(sampled)
    journal.close(committed=False)
    with Store(store_path) as store:
        assert store.replayed == 1
        assert store.query("SELECT variant, count(*) FROM probe_samples GROUP BY 1 ORDER BY 1") == [
            ("greedy", 1), ("sample", 2)]


def test_samples_per_request_lowers_the_apis_limit(tmp_path, emulator):
    emu = emulator()
    config = demo_config(tmp_path, [model_entry("openai", emu, samples_per_request=6)])
    assert probe_inprocess(config, tmp_path / "s.duckdb", limit=1, parameters={"samples": 20}).status == 0
    assert sorted(asked_samples(c) for c in generate_calls(emu)) == [1, 2, 6, 6, 6]


def test_a_greedy_only_model_is_refused_in_one_line_before_anything_is_sent(tmp_path, monkeypatch):
    from contam.providers.local import LocalProvider

    monkeypatch.setattr(LocalProvider, "can_sample", False)  # no provider is greedy-only today
    config = demo_config(tmp_path, [{"name": "smol", "provider": "local", "model": "smollm2",
                                     "params": {"device": "cpu"}}])
    run = probe_inprocess(config, tmp_path / "s.duckdb", limit=2)
    assert run.status == 1 and "decode greedily" in run.out
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        assert store.count("attempts") == store.count("probe_samples") == 0
