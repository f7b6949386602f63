"""Hint parsing and error classification edge cases, through httpx.MockTransport.

The loopback tests (test_providers_wire.py) show the common paths; these pin down the spellings
real servers use that the emulator does not produce on its own.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import httpx
import orjson
import pytest

from contam.harness.config import ModelSpec
from contam.providers.base import Fatal, QuotaExhausted, RateLimited, Reply, Request, Timeout, Transient
from contam.providers.hints import (
    longest,
    seconds_from_duration,
    seconds_from_retry_after,
    seconds_until_timestamp,
)
from contam.providers.lean import LeanClient
from contam.providers.registry import create_provider

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
SECRET = "sk-mock-SECRET-42f0c8d1"
QUESTION = Request(system="Answer briefly.", user="Game: Pokemon Red\nQuestion: Who is the rival?")


@pytest.fixture(autouse=True)
def secret_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for env in ("OPENAI_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_API_KEY"):
        monkeypatch.setenv(env, SECRET)


# ----------------------------------------------------------------------------- pure parsing

@pytest.mark.parametrize(("value", "seconds"), [
    ("120", 120.0), ("0", 0.0), ("1.5", 1.5), (" 7 ", 7.0), ("-3", 0.0),
    (format_datetime(NOW + timedelta(seconds=90), usegmt=True), 90.0),
    ("Sun, 01 Mar 2026 12:00:45 GMT", 45.0),
    (format_datetime(NOW - timedelta(seconds=30), usegmt=True), 0.0),  # a date in the past
])
def test_retry_after_seconds_and_http_dates(value: str, seconds: float) -> None:
    assert seconds_from_retry_after(value, now=NOW) == seconds


@pytest.mark.parametrize("value", [None, "", "soon", "nan", "inf", "Mon, 99 Foo 2026"])
def test_unreadable_retry_after_is_no_hint(value: str | None) -> None:
    assert seconds_from_retry_after(value, now=NOW) is None


@pytest.mark.parametrize(("value", "seconds"), [
    ("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1.5s", 1.5), ("0.250s", 0.25),
    ("1h2m3.5s", 3723.5), ("300us", 0.0003), ("2m", 120.0), ("12", 12.0), ("20.04466179s", 20.04466179),
])
def test_go_and_protobuf_durations(value: str, seconds: float) -> None:
    assert seconds_from_duration(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", [None, "", "s", "5x", "1s2", "ms20", "1 s"])
def test_unreadable_durations_are_no_hint(value: str | None) -> None:
    assert seconds_from_duration(value) is None


def test_rfc3339_timestamps_and_longest() -> None:
    assert seconds_until_timestamp("2026-03-01T12:00:30Z", now=NOW) == 30.0
    assert seconds_until_timestamp("2026-03-01T11:00:00+00:00", now=NOW) == 0.0
    assert seconds_until_timestamp("yesterday", now=NOW) is None
    assert longest([None, 2.0, 0.5]) == 2.0
    assert longest([None, None]) is None


# ----------------------------------------------------------------------------- through a transport

def provider_for(name: str, handler, **overrides):
    """A provider whose client answers every request with ``handler(request)``."""
    spec = ModelSpec(name=f"{name}-label", provider=name, model=f"{name}-model",
                     base_url="http://mock.invalid" + ("/v1" if name == "openai" else ""),
                     timeout_s=1.0, **overrides)
    client = LeanClient(transport=httpx.MockTransport(handler), timeout=1.0)  # as the engine's
    return create_provider(spec, client)


def answer(status: int, body=None, headers=None, content: bytes | None = None):
    def handler(request: httpx.Request) -> httpx.Response:
        data = content if content is not None else orjson.dumps(body)
        return httpx.Response(status, content=data, headers=headers or {})
    return handler


async def outcome(name: str, handler, **overrides) -> Reply | Exception:
    try:
        return await provider_for(name, handler, **overrides).generate(QUESTION)
    except Exception as exc:  # the classified error is the result under test
        assert SECRET not in str(exc)
        return exc


OPENAI_429 = {"error": {"message": "Rate limit reached", "type": "requests",
                        "code": "rate_limit_exceeded"}}


@pytest.mark.parametrize(("headers", "seconds"), [
    ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s",
      "x-ratelimit-remaining-tokens": "5000", "x-ratelimit-reset-tokens": "20ms"}, 360.0),
    ({"x-ratelimit-remaining-requests": "10", "x-ratelimit-reset-requests": "6m0s",
      "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "20ms"}, 0.02),
    ({"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "1.5s"}, 1.5),
    ({"retry-after": "3", "x-ratelimit-reset-requests": "6m0s"}, 3.0),
    ({"retry-after-ms": "1500", "retry-after": "3"}, 1.5),
])
async def test_openai_hint_headers(headers: dict[str, str], seconds: float) -> None:
    error = await outcome("openai", answer(429, OPENAI_429, headers))
    assert isinstance(error, RateLimited)
    assert error.retry_after_s == pytest.approx(seconds)


@pytest.mark.parametrize("name", ["openai", "anthropic", "ollama", "gemini"])
async def test_retry_after_http_date_through_transport(name: str) -> None:
    asked = datetime.now(timezone.utc)
    when = asked + timedelta(seconds=90)  # the header drops the fraction of a second
    error = await outcome(name, answer(429, {"error": {"message": "slow down"}},
                                       {"retry-after": format_datetime(when, usegmt=True)}))
    took = (datetime.now(timezone.utc) - asked).total_seconds()  # however loaded the machine
    assert isinstance(error, RateLimited)
    assert 89 - took <= error.retry_after_s <= 90


async def test_openai_insufficient_quota_stops_instead_of_retrying() -> None:
    body = {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                      "code": "insufficient_quota"}}
    error = await outcome("openai", answer(429, body, {"retry-after": "20"}))
    assert isinstance(error, QuotaExhausted) and not error.retryable


def gemini_429(*details) -> dict:
    return {"error": {"code": 429, "message": "You exceeded your current quota",
                      "status": "RESOURCE_EXHAUSTED", "details": list(details)}}


RETRY_INFO = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}


def quota_failure(quota_id: str) -> dict:
    return {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_requests",
                            "quotaId": quota_id}]}


async def test_gemini_retry_info_fractional_seconds() -> None:
    error = await outcome("gemini", answer(429, gemini_429(
        quota_failure("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"), RETRY_INFO)))
    assert type(error) is RateLimited
    assert error.retry_after_s == 1.5


async def test_gemini_per_day_quota_failure_beats_its_retry_info() -> None:
    error = await outcome("gemini", answer(429, gemini_429(
        quota_failure("GenerateRequestsPerDayPerProjectPerModel-FreeTier"), RETRY_INFO)))
    assert isinstance(error, QuotaExhausted)
    assert "day's quota" in str(error)


async def test_gemini_error_wrapped_in_a_list() -> None:
    error = await outcome("gemini", answer(503, [{"error": {"code": 503, "message": "overloaded",
                                                            "status": "UNAVAILABLE"}}]))
    assert type(error) is Transient and "overloaded" in str(error)


async def test_anthropic_reset_timestamp_when_no_retry_after() -> None:
    reset = (datetime.now(timezone.utc) + timedelta(seconds=40)).strftime("%Y-%m-%dT%H:%M:%SZ")
    headers = {"anthropic-ratelimit-requests-remaining": "0",
               "anthropic-ratelimit-requests-reset": reset,
               "anthropic-ratelimit-tokens-remaining": "9000",
               "anthropic-ratelimit-tokens-reset": "2099-01-01T00:00:00Z"}
    body = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    error = await outcome("anthropic", answer(429, body, headers))
    assert isinstance(error, RateLimited)
    assert 37 <= error.retry_after_s <= 40


async def test_anthropic_usage_limit_is_quota() -> None:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message":
            "You have reached your specified API usage limits. You will regain access on "
            "2026-04-01 at 00:00 UTC."}}
    assert isinstance(await outcome("anthropic", answer(400, body)), QuotaExhausted)


async def test_ollama_cloud_usage_limit_is_quota() -> None:
    body = {"error": "you (someone) have reached your session usage limit, upgrade for higher "
                     "limits: https://ollama.com/upgrade"}
    assert isinstance(await outcome("ollama", answer(429, body)), QuotaExhausted)


@pytest.mark.parametrize("name", ["openai", "gemini", "anthropic", "ollama"])
@pytest.mark.parametrize(("status", "kind"), [(408, Transient), (409, Transient), (502, Transient),
                                              (400, Fatal), (401, Fatal), (403, Fatal), (404, Fatal),
                                              (422, Fatal)])
async def test_status_classes(name: str, status: int, kind: type) -> None:
    error = await outcome(name, answer(status, {"error": {"message": "provider says no"}}))
    assert type(error) is kind
    assert error.http_status == status
    assert f"HTTP {status}" in str(error)


@pytest.mark.parametrize("name", ["openai", "gemini", "anthropic", "ollama"])
async def test_error_message_echoing_the_key_is_redacted(name: str) -> None:
    body = {"error": {"message": f"Incorrect API key provided: {SECRET}"}} if name != "ollama" \
        else {"error": f"bad key {SECRET}"}
    error = await outcome(name, answer(401, body))
    assert isinstance(error, Fatal)
    assert "[REDACTED]" in str(error)


@pytest.mark.parametrize("name", ["openai", "gemini", "anthropic", "ollama"])
@pytest.mark.parametrize("body", [{"unexpected": True}, {"choices": [], "candidates": [{}],
                                                         "content": "not a list"}, [1, 2]])
async def test_200_with_the_wrong_shape_is_transient(name: str, body) -> None:
    error = await outcome(name, answer(200, body))
    assert type(error) is Transient
    assert "unexpected shape" in str(error)


@pytest.mark.parametrize("name", ["openai", "gemini", "anthropic", "ollama"])
async def test_html_error_page_is_still_classified(name: str) -> None:
    error = await outcome(name, answer(502, content=b"<html>Bad Gateway</html>"))
    assert type(error) is Transient and "Bad Gateway" in str(error)


@pytest.mark.parametrize(("exc", "kind"), [
    (httpx.ConnectError("connection refused"), Transient),
    (httpx.ReadError("connection reset by peer"), Transient),
    (httpx.RemoteProtocolError("Server disconnected without sending a response."), Transient),
    (httpx.ReadTimeout("timed out"), Timeout),
    (httpx.ConnectTimeout("timed out"), Timeout),
    (httpx.UnsupportedProtocol("no scheme"), Fatal),
])
async def test_transport_exceptions_are_translated_once(exc: Exception, kind: type) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc
    error = await outcome("openai", handler)
    assert type(error) is kind
    assert error.__cause__ is exc


async def test_gemini_blocked_prompt_is_an_empty_answer() -> None:
    body = {"promptFeedback": {"blockReason": "SAFETY"}, "modelVersion": "gemini-model",
            "usageMetadata": {"promptTokenCount": 9}}
    reply = await outcome("gemini", answer(200, body))
    assert reply == Reply(text="", served_model="gemini-model", finish_reason="blocked:SAFETY",
                          input_tokens=9, output_tokens=None)


async def test_gemini_thoughts_are_not_the_answer_but_are_counted() -> None:
    body = {"candidates": [{"content": {"parts": [{"text": "pondering", "thought": True},
                                                  {"text": "Pallet Town."}]},
                            "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 3,
                              "thoughtsTokenCount": 40},
            "modelVersion": "gemini-model"}
    reply = await outcome("gemini", answer(200, body))
    assert (reply.text, reply.output_tokens) == ("Pallet Town.", 43)


async def test_openai_refusal_is_kept_as_the_answer() -> None:
    body = {"model": "openai-model", "choices": [{"message": {"content": None,
                                                              "refusal": "I can't help."},
                                                  "finish_reason": "stop"}]}
    reply = await outcome("openai", answer(200, body))
    assert reply.text == "I can't help."


async def test_anthropic_thinking_blocks_are_not_the_answer() -> None:
    body = {"model": "anthropic-model", "stop_reason": "end_turn",
            "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Blue."}],
            "usage": {"input_tokens": 5, "output_tokens": 2}}
    assert (await outcome("anthropic", answer(200, body))).text == "Blue."


async def test_configured_output_limit_wins_over_the_request_default() -> None:
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(orjson.loads(request.content))
        return httpx.Response(500)
    limited = Request(system="s", user="u", max_output_tokens=16)
    for name, params, key in (("anthropic", {"max_tokens": 900}, "max_tokens"),
                              ("openai", {"max_tokens": 900}, "max_tokens"),
                              ("ollama", {"num_predict": 900}, "num_predict"),
                              ("gemini", {"maxOutputTokens": 900}, "maxOutputTokens")):
        with pytest.raises(Transient):
            await provider_for(name, handler, params=params).generate(limited)
        body = seen[-1]
        placed = body.get("options") or body.get("generationConfig") or body
        assert placed[key] == 900
        assert "max_completion_tokens" not in body


# ----------------------------------------------------------------------------- null and empty text

NULL_TEXT = {  # Ollama's `"response": null` was stored as the answer "None"
    "ollama": [{"model": "ollama-model", "response": None, "done": True}, {"model": "ollama-model"}],
    "openai": [{"model": "openai-model", "choices": [{"message": {"content": None}, "finish_reason": "stop"}]},
               {"model": "openai-model", "choices": [{"message": {"content": None, "refusal": None}}]},
               {"model": "openai-model", "choices": [{"message": {"content": 42}, "finish_reason": "stop"}]}],
    "anthropic": [{"model": "anthropic-model", "content": None, "stop_reason": "end_turn"},
                  {"model": "anthropic-model", "content": [{"type": "text", "text": None}]}],
    "gemini": [{"candidates": [{"content": {"role": "model"}, "finishReason": "STOP"}]},
               {"candidates": [{"content": {"parts": []}, "finishReason": "STOP"}]},
               {"candidates": [{"content": {"parts": [{"text": None}]}, "finishReason": "STOP"}]},
               {"candidates": [{"content": {"parts": [{"text": "hm", "thought": True}]}}]}],
}


@pytest.mark.parametrize(("name", "body"), [(name, body) for name, bodies in NULL_TEXT.items()
                                            for body in bodies])
async def test_null_answer_text_is_a_malformed_reply_never_the_text_none(name: str, body) -> None:
    error = await outcome(name, answer(200, body))
    assert type(error) is Transient and error.retryable, error
    assert "unexpected shape" in str(error)


BLANK_TEXT = {  # a model that said nothing: a blank answer, which is data (README, "Null content")
    "ollama": ({"model": "ollama-model", "response": "", "done_reason": "stop"}, "stop"),
    "openai": ({"model": "openai-model", "choices": [{"message": {"content": ""}, "finish_reason": "length"}]},
               "length"),
    "openai-filtered": ({"model": "openai-model", "choices": [
        {"message": {"content": None}, "finish_reason": "content_filter"}]}, "content_filter"),
    "anthropic": ({"model": "anthropic-model", "content": [], "stop_reason": "end_turn"}, "end_turn"),
    "anthropic-thinking-only": ({"model": "anthropic-model", "stop_reason": "max_tokens",
                                 "content": [{"type": "thinking", "thinking": "hmm"}]}, "max_tokens"),
    "gemini": ({"candidates": [{"content": {"parts": [{"text": ""}]}, "finishReason": "STOP"}]}, "STOP"),
    "gemini-recitation": ({"candidates": [{"finishReason": "RECITATION"}]}, "RECITATION"),
    "gemini-max-tokens": ({"candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS"}]},
                          "MAX_TOKENS"),
}


@pytest.mark.parametrize("case", sorted(BLANK_TEXT))
async def test_a_model_that_said_nothing_is_a_blank_answer(case: str) -> None:
    body, finish_reason = BLANK_TEXT[case]
    reply = await outcome(case.split("-")[0], answer(200, body))
    assert isinstance(reply, Reply), reply
    assert (reply.text, reply.finish_reason) == ("", finish_reason)
