"""Servers that ignore ``n`` (OpenAI-compatible, as `transformers serve` does) or Gemini's
``candidateCount``: a reply with fewer completions than asked leaves the rest to a second pass of
the same run, one sample per request, said once per model. Against the emulator told to ignore n,
and through ``httpx.MockTransport`` (a server that sends one choice, whatever its reply says)."""

from __future__ import annotations

import httpx
import orjson
import pytest

from contam.harness.store import Store
from contam.providers.registry import create_provider
from tests.probekit import asked_samples, demo_config, generate_calls, model_entry, probe_inprocess


@pytest.fixture(autouse=True)
def _keys(keys):
    return keys


def stored(store_path) -> list[tuple]:
    with Store(store_path, read_only=True) as store:
        return store.query("SELECT model, variant, count(*), count(DISTINCT sample), max(sample) "
                           "FROM probe_samples GROUP BY 1, 2 ORDER BY 1, 2")


def test_a_server_ignoring_n_gets_the_rest_one_per_request_in_the_same_run(tmp_path, emulator):
    emu = emulator(ignore_n=True)
    config = demo_config(tmp_path, [model_entry("openai", emu), model_entry("gemini", emu)])
    run = probe_inprocess(config, tmp_path / "s.duckdb", limit=2, parameters={"samples": 4})
    assert run.status == 0, run.out + run.err
    assert "still missing" not in run.out + run.err
    assert stored(tmp_path / "s.duckdb") == [
        ("gemini-m", "greedy", 2, 1, 0), ("gemini-m", "sample", 8, 4, 3),
        ("openai-m", "greedy", 2, 1, 0), ("openai-m", "sample", 8, 4, 3)]
    # per model: 2 greedy + 2 asking 4 (one came back each), then 3 + 3 asked one by one
    asked = sorted(asked_samples(call) for call in generate_calls(emu))
    assert asked == [1] * (2 * (2 + 6)) + [4] * 4
    assert run.out.count("openai-m: the server ignores n (a reply held 1 of the 4 completions "
                         "asked); asking the 6 samples left one per request") == 1
    assert run.out.count("gemini-m: the server ignores candidateCount") == 1
    assert run.result.cells_scored == 4


def test_a_server_honouring_n_gets_no_second_pass(tmp_path, emulator):
    emu = emulator()
    config = demo_config(tmp_path, [model_entry("openai", emu)])
    run = probe_inprocess(config, tmp_path / "s.duckdb", limit=2, parameters={"samples": 4})
    assert run.status == 0 and "ignores" not in run.out
    assert sorted(asked_samples(call) for call in generate_calls(emu)) == [1, 1, 4, 4]


def one_choice_server(seen: list[dict]) -> httpx.MockTransport:
    """An OpenAI-compatible server that answers one choice whatever ``n`` asks for."""
    def handle(request: httpx.Request) -> httpx.Response:
        body = orjson.loads(request.content)
        seen.append(body)
        text = f"answer {len(seen)}"
        return httpx.Response(200, json={
            "model": body["model"], "usage": {"prompt_tokens": 9, "completion_tokens": 2},
            "choices": [{"index": 0, "message": {"content": text}, "finish_reason": "stop"}]})

    return httpx.MockTransport(handle)


def test_a_mock_server_sending_one_choice_finishes_in_one_run(tmp_path):
    seen: list[dict] = []
    transport = one_choice_server(seen)

    async def no_connection_check() -> None:
        return None

    def factory(spec, client):
        provider = create_provider(spec, httpx.AsyncClient(transport=transport))
        provider.preflight = no_connection_check  # its check opens a socket to the base_url
        return provider

    config = demo_config(tmp_path, [{"name": "served", "provider": "openai", "model": "m",
                                     "base_url": "http://mock.invalid/v1", "max_attempts": 2}])
    run = probe_inprocess(config, tmp_path / "s.duckdb", limit=3, parameters={"samples": 5},
                          provider_factory=factory)
    assert run.status == 0, run.out + run.err
    assert stored(tmp_path / "s.duckdb") == [("served", "greedy", 3, 1, 0),
                                             ("served", "sample", 15, 5, 4)]
    assert sorted(body.get("n", 1) for body in seen) == [1] * (3 + 12) + [5] * 3
    assert run.out.count("the server ignores n") == 1
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        texts = store.query("SELECT count(DISTINCT text_raw) FROM probe_samples WHERE variant = 'sample'")
    assert texts == [(15,)]  # every sample its own reply, none stored twice
