"""The four providers over real loopback sockets against the emulator.

Every test runs once per wire protocol (openai, gemini, anthropic, ollama): the engine's own client
(:class:`contam.providers.lean.LeanClient` over httpx's transport), a real HTTP/1.1 server, the providers'
own classification of what came back. The last tests repeat the classification through a plain
``httpx.AsyncClient``, which a caller may pass instead.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest

from contam.harness.config import ModelSpec
from contam.providers.base import (
    Fatal, MissingKey, QuotaExhausted, RateLimited, Reply, Request, ServedModelMismatch, Timeout, Transient,
)
from contam.harness.emulator.server import default_answer
from contam.providers.lean import LeanClient
from contam.providers.registry import check_first_reply, create_provider

pytestmark = pytest.mark.anyio

# provider -> (model id, key variable, header carrying the key, how the header spells it)
PROVIDERS = {
    "openai": ("gpt-emu-1", "OPENAI_API_KEY", "authorization", "Bearer {key}"),
    "gemini": ("gemini-emu-flash", "GEMINI_API_KEY", "x-goog-api-key", "{key}"),
    "anthropic": ("claude-emu-1", "ANTHROPIC_API_KEY", "x-api-key", "{key}"),
    "ollama": ("llama-emu:8b", "OLLAMA_API_KEY", "authorization", "Bearer {key}"),
}
FINISH_STOP = {"openai": "stop", "gemini": "STOP", "anthropic": "end_turn", "ollama": "stop"}
FINISH_LENGTH = {"openai": "length", "gemini": "MAX_TOKENS", "anthropic": "max_tokens",
                 "ollama": "length"}
QUESTION = Request(system="Answer from memory only.",
                   user="Game: Pokemon Red\nQuestion: Which city has the first gym?")
# Substrings that would mean a tool, function, search or grounding field went out (R2).
TOOL_WORDS = ("tool", "function", "grounding", "retrieval", "search", "plugin")


@pytest.fixture(params=list(PROVIDERS))
def provider(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A distinct secret per provider, set in its conventional environment variable."""
    secrets = {name: f"{name}-SECRET-7f3a9c1e5b" for name in PROVIDERS}
    for name, (_, env, _, _) in PROVIDERS.items():
        monkeypatch.setenv(env, secrets[name])
    return secrets


def engine_client() -> LeanClient:
    """The kind of client the engine hands its providers."""
    return LeanClient(transport=httpx.AsyncHTTPTransport(), timeout=5.0)


def spec_for(provider: str, emu, **overrides) -> ModelSpec:
    fields = {"name": f"{provider}-label", "provider": provider, "model": PROVIDERS[provider][0],
              "base_url": emu.base_url(provider), "timeout_s": 5.0, **overrides}
    return ModelSpec(**fields)


async def ask(provider: str, emu, request: Request = QUESTION, **overrides) -> Reply:
    async with engine_client() as client:
        return await create_provider(spec_for(provider, emu, **overrides), client).generate(request)


async def failure(provider: str, emu, keys: dict[str, str], **overrides) -> Exception:
    """The classified error of one call; also checks that no key leaked into its message."""
    with pytest.raises(Exception) as caught:
        await ask(provider, emu, **overrides)
    assert_no_secret(str(caught.value), keys)
    return caught.value


def assert_no_secret(text: str, keys: dict[str, str]) -> None:
    for secret in keys.values():
        assert secret not in text


def generate_calls(emu) -> list:
    return [r for r in emu.requests if r.method == "POST" and not r.path.startswith("/api/show")]


# ----------------------------------------------------------------------------- happy path

async def test_happy_path_reads_text_model_tokens_and_finish_reason(provider, keys, emulator):
    emu = emulator()
    reply = await ask(provider, emu)
    assert reply.text == default_answer(QUESTION.user)
    assert reply.served_model == PROVIDERS[provider][0]
    assert reply.finish_reason == FINISH_STOP[provider]
    assert reply.input_tokens == len(f"{QUESTION.system} {QUESTION.user}".split())
    assert reply.output_tokens == len(reply.text.split())


async def test_request_carries_exactly_one_question_and_no_tools(provider, keys, emulator):
    emu = emulator()
    await ask(provider, emu)
    (call,) = generate_calls(emu)
    body = call.body
    questions = {
        "openai": lambda b: [m["content"] for m in b["messages"] if m["role"] == "user"],
        "gemini": lambda b: [p["text"] for c in b["contents"] for p in c["parts"]],
        "anthropic": lambda b: [m["content"] for m in b["messages"]],
        "ollama": lambda b: [b["prompt"]],
    }[provider](body)
    assert questions == [QUESTION.user]
    assert "context" not in body and "history" not in body
    serialized = json.dumps(body).lower()
    assert QUESTION.system.lower() in serialized
    assert not any(word in key.lower() for word in TOOL_WORDS for key in _keys(body))


def _keys(value) -> list[str]:
    if isinstance(value, dict):
        return [k for k, v in value.items() for k in [k, *_keys(v)]]
    if isinstance(value, list):
        return [k for v in value for k in _keys(v)]
    return []


async def test_key_travels_only_in_its_header(provider, keys, emulator):
    emu = emulator()
    await ask(provider, emu)
    (call,) = generate_calls(emu)
    _, _, header, spelling = PROVIDERS[provider]
    secret = keys[provider]
    assert call.headers[header] == spelling.format(key=secret)
    others = {k: v for k, v in call.headers.items() if k != header}
    assert secret not in json.dumps(others)
    assert secret not in call.path and secret not in json.dumps(call.query)
    assert secret.encode() not in call.raw_body


async def test_sampling_params_go_where_the_api_reads_them(provider, keys, emulator):
    emu = emulator()
    params = {"openai": {"temperature": 0.3, "seed": 7},
              "gemini": {"temperature": 0.3, "seed": 7},
              "anthropic": {"temperature": 0.3, "top_k": 7},
              "ollama": {"temperature": 0.3, "seed": 7}}[provider]
    await ask(provider, emu, params=params)
    body = generate_calls(emu)[0].body
    placed = {"openai": body, "gemini": body.get("generationConfig"), "anthropic": body,
              "ollama": body.get("options")}[provider]
    assert {k: placed[k] for k in params} == params
    if provider == "anthropic":
        assert body["max_tokens"] == 1024  # required by the API; the default when none is set
    if provider == "ollama":
        assert body["stream"] is False


async def test_output_limit_is_sent_and_truncation_reported(provider, keys, emulator):
    emu = emulator(responder=lambda q: "one two three four five six")
    limited = Request(system=QUESTION.system, user=QUESTION.user, max_output_tokens=2)
    reply = await ask(provider, emu, request=limited)
    assert reply.text == "one two"
    assert reply.output_tokens == 2
    assert reply.finish_reason == FINISH_LENGTH[provider]


# ----------------------------------------------------------------------------- rate limits

async def test_429_hint_is_read_exactly(provider, keys, emulator):
    """Retry-After seconds for openai/anthropic/ollama; Gemini's RetryInfo.retryDelay "2.5s"."""
    emu = emulator(script=["429:2.5"])
    error = await failure(provider, emu, keys)
    assert isinstance(error, RateLimited)
    assert error.retry_after_s == 2.5
    assert error.http_status == 429


async def test_rpm_limit_gives_real_429_with_hint(provider, keys, emulator):
    emu = emulator(rpm=1)
    await ask(provider, emu)
    error = await failure(provider, emu, keys)
    assert isinstance(error, RateLimited)
    assert 0 < error.retry_after_s <= 60


async def test_retry_after_as_http_date(provider, keys, emulator):
    """The emulator's date is the next whole second after now + 30 s: the hint is read as at
    most 31 s, and at least 30 s less however long the round trip took."""
    emu = emulator(script=["429date:30"])
    asked = time.monotonic()
    error = await failure(provider, emu, keys)
    took = time.monotonic() - asked
    assert isinstance(error, RateLimited)
    assert 30 - took <= error.retry_after_s <= 31


# ----------------------------------------------------------------------------- faults

@pytest.mark.parametrize("status", [500, 503, 529])
async def test_server_errors_are_transient(provider, keys, emulator, status):
    emu = emulator(script=[str(status)])
    error = await failure(provider, emu, keys)
    assert type(error) is Transient
    assert error.http_status == status
    assert error.retryable


async def test_connection_reset_is_transient(provider, keys, emulator):
    emu = emulator(script=["reset"])
    error = await failure(provider, emu, keys)
    assert type(error) is Transient
    assert isinstance(error.__cause__, httpx.TransportError)


async def test_malformed_json_is_transient(provider, keys, emulator):
    emu = emulator(script=["malformed"])
    error = await failure(provider, emu, keys)
    assert type(error) is Transient
    assert "not JSON" in str(error)


async def test_hang_past_timeout_is_timeout(provider, keys, emulator):
    emu = emulator(script=["hang"], hang_s=10)
    error = await failure(provider, emu, keys, timeout_s=0.3)
    assert isinstance(error, Timeout)
    assert error.outcome == "timeout"


async def test_then_success_after_faults(provider, keys, emulator):
    emu = emulator(script=["500", "529", "reset", "ok"])
    async with engine_client() as client:
        llm = create_provider(spec_for(provider, emu), client)
        outcomes = []
        for _ in range(4):
            try:
                outcomes.append((await llm.generate(QUESTION)).text)
            except Transient as exc:
                outcomes.append(type(exc).__name__)
    assert outcomes == ["Transient", "Transient", "Transient", default_answer(QUESTION.user)]


# ----------------------------------------------------------------------------- quota, model, keys

async def test_per_day_quota_is_quota_exhausted(provider, keys, emulator):
    emu = emulator(quota_per_day=1)
    await ask(provider, emu)
    error = await failure(provider, emu, keys)
    assert isinstance(error, QuotaExhausted)
    assert not error.retryable
    assert "quota" in str(error) and "resumes" in str(error)


async def test_served_model_substitution_is_detected(provider, keys, emulator):
    emu = emulator(served_model="impostor-9000")
    async with engine_client() as client:
        llm = create_provider(spec_for(provider, emu), client)
        reply = await llm.generate(QUESTION)
    assert reply.served_model == "impostor-9000"
    with pytest.raises(ServedModelMismatch) as caught:
        check_first_reply(llm, reply)
    assert "impostor-9000" in str(caught.value) and PROVIDERS[provider][0] in str(caught.value)


async def test_dated_snapshot_of_the_requested_model_is_accepted(provider, keys, emulator):
    emu = emulator(served_model=f"{PROVIDERS[provider][0]}-2026-01-01")
    async with engine_client() as client:
        llm = create_provider(spec_for(provider, emu), client)
        check_first_reply(llm, await llm.generate(QUESTION))


@pytest.mark.parametrize("provider_name", ["openai", "gemini", "anthropic"])
async def test_missing_key_names_the_variable(provider_name, keys, monkeypatch, emulator):
    env = PROVIDERS[provider_name][1]
    monkeypatch.delenv(env)
    emu = emulator()
    with pytest.raises(MissingKey) as caught:
        create_provider(spec_for(provider_name, emu), None)
    assert env in str(caught.value)
    assert emu.requests == []


async def test_missing_key_in_a_configured_variable(provider, keys, monkeypatch, emulator):
    monkeypatch.delenv("CONTAM_TEST_UNSET_KEY", raising=False)
    with pytest.raises(MissingKey, match="CONTAM_TEST_UNSET_KEY"):
        create_provider(spec_for(provider, emulator(), api_key_env="CONTAM_TEST_UNSET_KEY"), None)


async def test_wrong_key_is_fatal_and_never_echoed(provider, keys, emulator):
    emu = emulator(api_keys=frozenset({"the-only-valid-key"}))
    error = await failure(provider, emu, keys)
    assert isinstance(error, Fatal) and not error.retryable
    assert error.http_status in (400, 401, 403)


async def test_tool_params_are_refused_before_any_request(provider, keys, emulator):
    emu = emulator()
    for params in ({"tools": [{"type": "web_search"}]}, {"tool_choice": "auto"},
                   {"web_search_options": {}}, {"generationConfig": {"googleSearch": {}}}):
        with pytest.raises(Fatal, match="R2"):
            create_provider(spec_for(provider, emu, params=params), None)
    assert emu.requests == []


async def test_params_cannot_rewrite_the_question(provider, keys, emulator):
    reserved = {"openai": "messages", "gemini": "contents", "anthropic": "messages",
                "ollama": "context"}[provider]
    with pytest.raises(Fatal, match="R1"):
        create_provider(spec_for(provider, emulator(), params={reserved: []}), None)


# ----------------------------------------------------------------------------- other clients

@pytest.mark.parametrize("script", ["ok", "429:2.5", "500", "reset", "malformed", "hang"])
async def test_a_callers_own_client_is_classified_the_same(provider, keys, emulator, script):
    """A caller may pass a plain httpx client instead of the engine's: outcomes must not change."""
    emu = emulator(script=[script], hang_s=10)
    async with httpx.AsyncClient() as client:
        llm = create_provider(spec_for(provider, emu, timeout_s=0.3), client)
        try:
            result = await llm.generate(QUESTION)
        except Exception as exc:  # the classification is what is under test
            result = exc
    expected = {"ok": Reply, "429:2.5": RateLimited, "500": Transient, "reset": Transient,
                "malformed": Transient, "hang": Timeout}[script]
    assert type(result) is expected
    if script == "429:2.5":
        assert result.retry_after_s == 2.5
