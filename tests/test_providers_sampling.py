"""A probe's sampling on the wire: each protocol puts the temperature and the number of completions
where its API reads them (OpenAI ``n``, Gemini ``generationConfig.candidateCount``; Anthropic and
Ollama have no multi-sample field and refuse a request for several), and reads every completion
of a multi-sample reply. Over real sockets against the emulator, and through
``httpx.MockTransport`` for replies the emulator does not make."""

from __future__ import annotations

import httpx
import orjson
import pytest

from contam.harness.config import ModelSpec
from contam.providers.base import Fatal, Request
from contam.providers.batch import request_body
from contam.providers.lean import LeanClient
from contam.providers.registry import create_provider

pytestmark = pytest.mark.anyio

MODELS = {"openai": "gpt-emu-1", "gemini": "gemini-emu-flash", "anthropic": "claude-emu-1",
          "ollama": "llama-emu:8b"}
SAMPLED = Request(system="Answer from memory only.", user="Question: Which city has the first gym?",
                  temperature=0.8, samples=5)


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for env in ("OPENAI_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(env, "sk-sampling-test-0000")


def spec(provider: str, base_url: str, **params) -> ModelSpec:
    return ModelSpec(name=f"{provider}-m", provider=provider, model=MODELS[provider],
                     base_url=base_url, timeout_s=5.0, params=params)


async def ask(provider: str, base_url: str, request: Request, **params):
    async with LeanClient(transport=httpx.AsyncHTTPTransport(), timeout=5.0) as client:
        return await create_provider(spec(provider, base_url, **params), client).generate(request)


def generate_body(emu) -> dict:
    (call,) = [r for r in emu.requests if r.method == "POST" and r.path != "/api/show"]
    return call.body


async def test_openai_sends_n_and_the_probes_temperature_and_reads_every_choice(emulator):
    emu = emulator()
    reply = await ask("openai", emu.base_url("openai"), SAMPLED, temperature=0.1, seed=7)
    body = generate_body(emu)
    assert (body["n"], body["temperature"], body["seed"]) == (5, 0.8, 7)
    assert len(reply.texts) == 5 and len(set(reply.texts)) == 5
    assert reply.text == reply.texts[0]
    assert reply.finish_reasons == ("stop",) * 5
    assert reply.output_tokens == sum(len(text.split()) for text in reply.texts)


async def test_gemini_sends_candidate_count_and_temperature_in_generation_config(emulator):
    emu = emulator()
    reply = await ask("gemini", emu.base_url("gemini"), SAMPLED, temperature=0.1)
    config = generate_body(emu)["generationConfig"]
    assert (config["candidateCount"], config["temperature"]) == (5, 0.8)
    assert len(set(reply.texts)) == 5
    assert reply.finish_reasons == ("STOP",) * 5


@pytest.mark.parametrize("provider", ["anthropic", "ollama"])
async def test_no_multi_sample_field_one_completion_per_request(provider, emulator):
    emu = emulator()
    one = Request(system=SAMPLED.system, user=SAMPLED.user, temperature=0.8)
    reply = await ask(provider, emu.base_url(provider), one, temperature=0.1)
    body = generate_body(emu)
    sent = body["temperature"] if provider == "anthropic" else body["options"]["temperature"]
    assert sent == 0.8
    assert reply.completions() == ((reply.text, reply.finish_reason),) and reply.texts == ()
    with pytest.raises(Fatal, match="at most 1"):
        await ask(provider, emu.base_url(provider), SAMPLED)
    assert len(emu.requests) == 1  # the refused request never left


async def test_a_plain_question_sends_neither_n_nor_a_temperature(emulator):
    emu = emulator()
    plain = Request(system="s", user="Question: q?")
    await ask("openai", emu.base_url("openai"), plain)
    await ask("gemini", emu.base_url("gemini"), plain)
    openai_body, gemini_body = [r.body for r in emu.requests]
    assert "n" not in openai_body and "temperature" not in openai_body
    assert "generationConfig" not in gemini_body


async def test_greedy_samples_repeat_and_sampled_ones_are_fresh_per_request(emulator):
    """The emulator draws new samples for every sampling request of a prompt (as a model would),
    and answers the same greedy text every time."""
    emu = emulator()
    url = emu.base_url("openai")
    greedy = Request(system="s", user="Question: q?", temperature=0.0)
    assert (await ask("openai", url, greedy)).text == (await ask("openai", url, greedy)).text
    two = Request(system="s", user="Question: q?", temperature=0.8, samples=2)
    first, second = (await ask("openai", url, two)).texts, (await ask("openai", url, two)).texts
    assert len(set(first + second)) == 4


async def test_batch_lines_carry_the_same_sampling_fields():
    async with httpx.AsyncClient() as client:
        openai = create_provider(spec("openai", "http://x/v1"), client)
        gemini = create_provider(spec("gemini", "http://x"), client)
        anthropic = create_provider(spec("anthropic", "http://x"), client)
        assert orjson.loads(request_body(openai, SAMPLED))["n"] == 5
        assert orjson.loads(request_body(gemini, SAMPLED))["generationConfig"]["candidateCount"] == 5
        with pytest.raises(Fatal):
            request_body(anthropic, SAMPLED)


def _mock(body: dict) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(
        lambda request: httpx.Response(200, json=body)))


async def test_openai_choices_are_read_in_index_order_refusals_as_their_text():
    body = {"model": "gpt-emu-1", "choices": [
        {"index": 1, "message": {"content": "second"}, "finish_reason": "length"},
        {"index": 0, "message": {"content": None, "refusal": "no"}, "finish_reason": "stop"}]}
    async with _mock(body) as client:
        reply = await create_provider(spec("openai", "http://x/v1"), client).generate(SAMPLED)
    assert reply.completions() == (("no", "stop"), ("second", "length"))


async def test_gemini_candidate_blocked_among_several_is_an_empty_completion_with_its_reason():
    body = {"modelVersion": "gemini-emu-flash", "candidates": [
        {"index": 0, "content": {"parts": [{"text": "Pewter"}]}, "finishReason": "STOP"},
        {"index": 1, "finishReason": "RECITATION"},
        {"index": 2, "content": {"parts": [{"text": "think", "thought": True}, {"text": "Pewter City"}]},
         "finishReason": "STOP"}]}
    async with _mock(body) as client:
        reply = await create_provider(spec("gemini", "http://x"), client).generate(SAMPLED)
    assert reply.completions() == (("Pewter", "STOP"), ("", "RECITATION"), ("Pewter City", "STOP"))


def test_a_local_model_refuses_more_samples_than_one_request_carries_before_loading_anything():
    import dataclasses

    import anyio

    from contam.providers.local import LocalProvider

    provider = LocalProvider(ModelSpec(name="l", provider="local", model="smollm2",
                                       params={"device": "cpu"}))  # no torch import
    too_many = dataclasses.replace(SAMPLED, samples=LocalProvider.max_samples + 1)
    with pytest.raises(Fatal, match="completions asked of one local request"):
        anyio.run(provider.generate, too_many)
