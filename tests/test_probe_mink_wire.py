"""min-k's wire: vLLM's /v1/completions with prompt_logprobs, from the client (httpx.MockTransport)
and from the emulator (real sockets, the official openai client), and the emulated model's
log-probabilities under each knowledge profile."""

from __future__ import annotations

import anyio
import httpx
import openai
import orjson
import pytest

from contam.harness.config import ModelSpec
from contam.harness.emulator.knowledge import Knowledge, KnownItem
from contam.harness.emulator.logprobs import MEMORISED_SCALE, UNSEEN_SCALE, prompt_tokens, token_logprob
from contam.providers.base import Fatal, RateLimited, Transient
from contam.providers.openai import OpenAIProvider

# A vLLM reply as its server writes it (Llama-2 ids; prompt_logprobs = 1 asked for the second
# position's alternative, the others hold the prompt token alone).
VLLM_REPLY = {
    "id": "cmpl-7f3a", "object": "text_completion", "created": 1733100000,
    "model": "meta-llama/Llama-2-7b-hf",
    "choices": [{"index": 0, "text": " is", "logprobs": None, "finish_reason": "length",
                 "stop_reason": None, "prompt_token_ids": [1, 15043, 29892, 590],
                 "prompt_logprobs": [
                     None,
                     {"15043": {"logprob": -7.584228515625, "rank": 2, "decoded_token": "Hello"},
                      "917": {"logprob": -2.512939214706421, "rank": 1, "decoded_token": "The"}},
                     {"29892": {"logprob": -1.4937736988067627, "rank": 1, "decoded_token": ","}},
                     {"590": {"logprob": -1.8308428525924683, "rank": 2, "decoded_token": " my"}}]}],
    "usage": {"prompt_tokens": 4, "total_tokens": 5, "completion_tokens": 1,
              "prompt_tokens_details": None},
    "service_tier": None, "system_fingerprint": None, "kv_transfer_params": None}


def _spec(base_url: str = "http://vllm.test:8000/v1",
          model: str = "meta-llama/Llama-2-7b-hf") -> ModelSpec:
    return ModelSpec(name="llama", provider="openai", model=model, base_url=base_url,
                     api_key_env="VLLM_KEY")


def _score(handler, text: str = "Hello, my"):
    async def go():
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await OpenAIProvider(_spec(), client=client).text_logprobs(text)
    return anyio.run(go)


@pytest.fixture(autouse=True)
def vllm_key(monkeypatch):
    monkeypatch.setenv("VLLM_KEY", "vllm-test-key-0123")


def test_the_request_asks_vllm_for_the_prompt_tokens_own_log_probabilities():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=VLLM_REPLY)

    scored = _score(handler)
    [request] = seen
    assert (request.method, str(request.url)) == ("POST", "http://vllm.test:8000/v1/completions")
    assert request.headers["authorization"] == "Bearer vllm-test-key-0123"
    assert orjson.loads(request.content) == {
        "model": "meta-llama/Llama-2-7b-hf", "prompt": "Hello, my", "max_tokens": 1,
        "temperature": 0, "prompt_logprobs": 0}
    # The first token (BOS) has nothing before it; by id, not by the more likely alternative.
    assert scored.tokens == ("Hello", ",", " my")
    assert scored.logprobs == (-7.584228515625, -1.4937736988067627, -1.8308428525924683)
    assert (scored.means, scored.stds) == (None, None)
    assert (scored.served_model, scored.input_tokens) == ("meta-llama/Llama-2-7b-hf", 4)


def test_without_token_ids_each_position_must_hold_the_prompt_token_alone():
    reply = orjson.loads(orjson.dumps(VLLM_REPLY))
    del reply["choices"][0]["prompt_token_ids"]
    reply["choices"][0]["prompt_logprobs"][1].pop("917")
    scored = _score(lambda request: httpx.Response(200, json=reply))
    assert scored.logprobs[0] == -7.584228515625
    ambiguous = orjson.loads(orjson.dumps(VLLM_REPLY))
    del ambiguous["choices"][0]["prompt_token_ids"]
    with pytest.raises(Transient, match="unexpected shape.*2 candidates"):
        _score(lambda request: httpx.Response(200, json=ambiguous))


def test_a_server_that_returns_no_prompt_log_probabilities_stops_the_model():
    reply = orjson.loads(orjson.dumps(VLLM_REPLY))
    del reply["choices"][0]["prompt_logprobs"]
    with pytest.raises(Fatal, match="returned no prompt_logprobs") as caught:
        _score(lambda request: httpx.Response(200, json=reply))
    assert "\n" not in str(caught.value)


def test_server_errors_are_classified_as_for_generation():
    body = {"error": {"message": "Requested prompt logprobs of 21, which is greater than max "
                                 "allowed: 20", "type": "BadRequestError", "param": None, "code": 400}}
    with pytest.raises(Fatal, match="HTTP 400: Requested prompt logprobs"):
        _score(lambda request: httpx.Response(400, json=body))
    with pytest.raises(RateLimited) as caught:
        _score(lambda request: httpx.Response(429, headers={"retry-after": "3"}, json=body))
    assert caught.value.retry_after_s == 3


# -- the emulator ---------------------------------------------------------------------------------

ITEMS = [KnownItem("red-01", "Pokémon Red", "official", "Which Badge does Brock award?",
                   "Boulder Badge"),
         KnownItem("brown-01", "Pokémon Brown", "fan", "Who leads the Gym of Ash Island?",
                   "Sensei Ash")]
TEXT = "Pokémon Red\nWhich Badge does Brock award?\nBoulder Badge"


def test_the_emulator_answers_the_provider_and_scores_tokens_by_memorisation(emulator):
    knowledge = Knowledge.from_items(ITEMS, profile="contaminated", seed=3)
    emu = emulator(knowledge=knowledge, seed=3)
    provider_spec = _spec(base_url=emu.base_url("openai"), model="emu-vllm")

    async def go(text):
        async with httpx.AsyncClient() as client:
            return await OpenAIProvider(provider_spec, client=client).text_logprobs(text)

    scored = anyio.run(go, TEXT)
    tokens = prompt_tokens(TEXT)
    assert scored.tokens == tuple(tokens[1:]) and scored.input_tokens == len(tokens)
    memorised = knowledge.memorised(ITEMS[0])
    assert scored.logprobs == tuple(token_logprob(3, "emu-vllm", TEXT, i, memorised)
                                    for i in range(1, len(tokens)))
    assert anyio.run(go, TEXT) == scored  # deterministic
    [request] = [r for r in emu.requests if r.path == "/v1/completions"][:1]
    assert request.body["prompt_logprobs"] == 0


def test_log_probabilities_follow_the_profile(emulator):
    """Contaminated: a memorised item's tokens are likelier than a fan item's; clean and no
    knowledge: one distribution for every text (mean -log p of MEMORISED_SCALE vs UNSEEN_SCALE)."""
    fan_text = "Pokémon Brown\nWho leads the Gym of Ash Island?\nSensei Ash"
    assert (MEMORISED_SCALE, UNSEEN_SCALE) == (0.4, 2.5)
    contaminated = emulator(knowledge=Knowledge.from_items(ITEMS, profile="contaminated"), seed=0)
    assert Knowledge.from_items(ITEMS, profile="contaminated").memorised(ITEMS[0])
    assert _mean(contaminated, TEXT) > -1 > _mean(contaminated, fan_text)
    clean = emulator(knowledge=Knowledge.from_items(ITEMS, profile="clean"), seed=0)
    assert _mean(clean, TEXT) < -1 and _mean(clean, fan_text) < -1
    assert _mean(emulator(seed=0), TEXT) < -1


def _mean(emu, text) -> float:
    """The mean log p of a text's scored tokens (prompt_logprobs = 0: the prompt token alone)."""
    entries = _raw(emu, text, 0)["choices"][0]["prompt_logprobs"][1:]
    return sum(next(iter(entry.values()))["logprob"] for entry in entries) / len(entries)


def _raw(emu, prompt, prompt_logprobs, **extra) -> dict:
    response = httpx.post(f"{emu.base_url('openai')}/completions", json={
        "model": "emu-vllm", "prompt": prompt, "max_tokens": 1,
        "prompt_logprobs": prompt_logprobs, **extra})
    return response.json() if response.status_code == 200 else {"status": response.status_code,
                                                                 **response.json()}


def test_alternatives_come_ranked_with_the_prompt_token_as_vllm_sends_them(emulator):
    emu = emulator(seed=1)
    entries = _raw(emu, TEXT, 3)["choices"][0]["prompt_logprobs"]
    assert entries[0] is None and len(entries) == len(prompt_tokens(TEXT))
    for position, entry in enumerate(entries[1:], start=1):
        own = [v for v in entry.values() if v["decoded_token"] == prompt_tokens(TEXT)[position]]
        assert len(own) == 1
        ranks = sorted(v["rank"] for v in entry.values())
        # The top 3 of the vocabulary, plus the prompt token where it is not among them.
        assert ranks == ([1, 2, 3] if own[0]["rank"] <= 3 else [1, 2, 3, own[0]["rank"]])
        by_rank = sorted(entry.values(), key=lambda v: v["rank"])
        assert [v["logprob"] for v in by_rank] == sorted((v["logprob"] for v in by_rank), reverse=True)
        assert sum(pow(2.718281828459045, v["logprob"]) for v in entry.values()) <= 1 + 1e-9


@pytest.mark.parametrize("extra, message", [
    ({"prompt_logprobs": 21}, "greater than max allowed: 20"),
    ({"prompt_logprobs": -1}, "greater than max allowed: 20"),
    ({"prompt_logprobs": -2}, "must be a positive value or -1"),
    ({"prompt_logprobs": 0, "echo": True}, "'echo' is not emulated"),
    ({"prompt_logprobs": 0, "prompt": ""}, "'prompt' must be a non-empty string"),
])
def test_requests_vllm_refuses_are_refused_with_its_message(emulator, extra, message):
    answer = _raw(emulator(), extra.pop("prompt", TEXT), extra.pop("prompt_logprobs"), **extra)
    assert answer["status"] == 400 and message in answer["error"]["message"]


def test_the_official_openai_client_parses_the_completions_reply(emulator):
    emu = emulator(seed=2)
    client = openai.OpenAI(base_url=emu.base_url("openai"), api_key="sk-client-test", max_retries=0)
    completion = client.completions.create(model="emu-vllm", prompt=TEXT, max_tokens=1,
                                           extra_body={"prompt_logprobs": 0})
    choice = completion.choices[0]
    assert completion.model == "emu-vllm" and choice.finish_reason == "length"
    assert choice.text == " Emulated" and completion.usage.prompt_tokens == len(prompt_tokens(TEXT))
    entries = choice.model_extra["prompt_logprobs"]
    assert entries[0] is None and all(len(entry) == 1 for entry in entries[1:])
