"""The API dialects the emulator speaks (OpenAI and Gemini here; Anthropic and Ollama in
:mod:`contam.harness.emulator.apis_single`, all four in :data:`contam.harness.emulator.dialects.DIALECTS`): how
each reads a call and spells each answer.

Every reply and error body here follows the provider's documented (and observed) shape closely
enough that the official openai, anthropic, google-genai and ollama clients parse it. The
emulator core (:mod:`contam.harness.emulator.server`) decides *what* to answer; a :class:`Dialect` only
decides how that answer looks on the wire for its API.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson

__all__ = [
    "Call",
    "Completion",
    "Canned",
    "Hint",
    "BadCall",
    "Dialect",
    "OpenAIDialect",
    "GeminiDialect",
    "json_reply",
    "proto_duration",
    "text_of",
    "bearer",
    "now_rfc3339",
    "next_id",
]


@dataclass(frozen=True, slots=True)
class Canned:
    """A complete HTTP answer: status, extra headers, body bytes."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()
    content_type: str = "application/json"


@dataclass(frozen=True, slots=True)
class Call:
    """One generate request as the emulator understands it."""

    api: str
    model: str
    system: str
    question: str
    max_tokens: int | None
    key: str | None
    temperature: float | None = None
    samples: int = 1  # OpenAI n, Gemini candidateCount; the other APIs have no such field


@dataclass(frozen=True, slots=True)
class Completion:
    """One answer of a reply (a multi-sample reply has several): its text, cut at the limit?"""

    text: str
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class Hint:
    """A rate-limit answer's wait: ``seconds`` exactly, and ``header`` as Retry-After says it."""

    seconds: float
    header: str
    header_only: bool = False  # an HTTP-date hint: no body hint (Gemini sends none then)
    limit: float | None = None


class BadCall(ValueError):
    """The request is not a valid call of this API: answered with the API's own 400."""


def json_reply(status: int, body: Any, headers: tuple[tuple[str, str], ...] = ()) -> Canned:
    return Canned(status=status, body=orjson.dumps(body), headers=headers)


def proto_duration(seconds: float) -> str:
    """Protobuf JSON duration, fractional seconds allowed: ``1.5s``, ``2s``, ``1.234s``."""
    text = f"{seconds:.3f}".rstrip("0").rstrip(".")
    return f"{text}s"


def _go_duration(seconds: float) -> str:
    """OpenAI's ``x-ratelimit-reset-*`` style: ``20ms``, ``1.234s``, ``6m0s``."""
    if seconds < 1:
        return f"{max(1, round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60)
    rest_text = f"{rest:.3f}".rstrip("0").rstrip(".")
    return f"{int(minutes)}m{rest_text}s" if minutes else f"{rest_text}s"


def text_of(content: Any) -> str:
    """A message content that is a string or a list of ``{"type": "text", "text": ...}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    raise BadCall("message content must be a string or a list of content parts")


def _parts_text(container: Any) -> str:
    parts = container.get("parts") if isinstance(container, dict) else None
    if not isinstance(parts, list):
        raise BadCall("expected an object with a 'parts' list")
    return "".join(part.get("text", "") for part in parts if isinstance(part, dict))


def _sample_count(value: Any) -> int:
    """``n`` / ``candidateCount`` as a count of answers; anything but a whole number >= 1 is a
    bad call, as the APIs answer it."""
    if value is None:
        return 1
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise BadCall(f"the number of answers must be a whole number >= 1, not {value!r}")
    return value


def bearer(headers: dict[str, str]) -> str | None:
    auth = headers.get("authorization", "")
    return auth[7:] if auth.lower().startswith("bearer ") else None


def now_rfc3339(offset_s: float = 0.0) -> str:
    when = datetime.now(timezone.utc) + timedelta(seconds=offset_s)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


_ids = itertools.count(1)


def next_id() -> str:
    return f"{next(_ids):012x}"


class Dialect:
    """How one API reads a call and writes its answers; subclasses override each part."""

    name = ""
    wants_answers = True  # whether its reply carries the server's answers (``ok``'s ``answers``)

    def call_from(self, path_model: str | None, headers: dict[str, str], query: dict[str, str],
                  body: Any) -> Call:
        raise NotImplementedError

    def ok(self, call: Call, *, served: str, answers: Sequence[Completion],
           input_tokens: int, output_tokens: int) -> Canned:
        raise NotImplementedError

    def error(self, status: int, message: str | None = None) -> Canned:
        raise NotImplementedError

    def rate_limited(self, call: Call, hint: Hint) -> Canned:
        raise NotImplementedError

    def quota_exhausted(self, call: Call, per_day: int | None) -> Canned:
        raise NotImplementedError

    def unauthorized(self, key: str | None) -> Canned:
        raise NotImplementedError

    def model_missing(self, model: str) -> Canned:
        return self.error(404, f"model '{model}' not found")


# --------------------------------------------------------------------------------------- OpenAI

_OPENAI_ERRORS = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory",
          "Country, region, or territory not supported"),
    404: ("invalid_request_error", "model_not_found",
          "The model does not exist or you do not have access to it."),
    409: ("invalid_request_error", None, "Request conflicted with another request."),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    502: ("server_error", None, "Bad gateway."),
    503: ("server_error", None, "The server is overloaded or not ready yet."),
}


def _masked(key: str) -> str:
    """OpenAI quotes a wrong key masked: first three and last four characters."""
    return f"{key[:3]}{'*' * max(0, len(key) - 7)}{key[-4:]}" if len(key) > 7 else "*" * len(key)


class OpenAIDialect(Dialect):
    name = "openai"

    def call_from(self, path_model: str | None, headers: dict[str, str], query: dict[str, str],
                  body: Any) -> Call:
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            raise BadCall("you must provide a model parameter")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadCall("'messages' must be a non-empty array")
        system = "".join(text_of(m.get("content")) for m in messages
                         if m.get("role") in ("system", "developer"))
        users = [text_of(m.get("content")) for m in messages if m.get("role") == "user"]
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        key = bearer(headers)
        return Call("openai", body["model"], system, users[-1] if users else "", limit, key,
                    body.get("temperature"), _sample_count(body.get("n")))

    def ok(self, call: Call, *, served: str, answers: Sequence[Completion],
           input_tokens: int, output_tokens: int) -> Canned:
        choices = [{"index": n, "message": {"role": "assistant", "content": answer.text,
                                            "refusal": None, "annotations": []},
                    "logprobs": None, "finish_reason": "length" if answer.truncated else "stop"}
                   for n, answer in enumerate(answers)]
        return json_reply(200, {
            "id": f"chatcmpl-emu{next_id()}", "object": "chat.completion",
            "created": int(time.time()), "model": served,
            "choices": choices,
            "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                      "total_tokens": input_tokens + output_tokens,
                      "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                      "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                                    "accepted_prediction_tokens": 0,
                                                    "rejected_prediction_tokens": 0}},
            "service_tier": "default", "system_fingerprint": "fp_emulator",
        }, (("x-request-id", f"req_{next_id()}"),))

    def _error_body(self, status: int, message: str, kind: str, code: str | None) -> Canned:
        return json_reply(status, {"error": {"message": message, "type": kind, "param": None,
                                             "code": code}})

    def error(self, status: int, message: str | None = None) -> Canned:
        kind, code, default = _OPENAI_ERRORS.get(
            status, ("server_error" if status >= 500 else "invalid_request_error", None,
                     f"HTTP {status}"))
        return self._error_body(status, message or default, kind, code)

    def rate_limited(self, call: Call, hint: Hint) -> Canned:
        limit = f"{hint.limit:g}" if hint.limit else "1"
        message = (f"Rate limit reached for {call.model} in organization org-emulator on requests "
                   f"per min (RPM): Limit {limit}, Used {limit}, Requested 1. Please try again in "
                   f"{proto_duration(hint.seconds)}. Visit https://platform.openai.com/account/"
                   "rate-limits to learn more.")
        canned = self._error_body(429, message, "requests", "rate_limit_exceeded")
        headers = (("retry-after", hint.header), ("x-ratelimit-limit-requests", limit),
                   ("x-ratelimit-remaining-requests", "0"),
                   ("x-ratelimit-reset-requests", _go_duration(hint.seconds)))
        return Canned(429, canned.body, headers)

    def quota_exhausted(self, call: Call, per_day: int | None) -> Canned:
        return self._error_body(
            429, "You exceeded your current quota, please check your plan and billing details. "
                 "For more information on this error, read the docs: "
                 "https://platform.openai.com/docs/guides/error-codes/api-errors.",
            "insufficient_quota", "insufficient_quota")

    def unauthorized(self, key: str | None) -> Canned:
        if not key:
            return self._error_body(
                401, "You didn't provide an API key. You need to provide your API key in an "
                     "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                "invalid_request_error", None)
        return self._error_body(
            401, f"Incorrect API key provided: {_masked(key)}. You can find your API key at "
                 "https://platform.openai.com/account/api-keys.",
            "invalid_request_error", "invalid_api_key")

    def model_missing(self, model: str) -> Canned:
        return self.error(404, f"The model `{model}` does not exist or you do not have access to it.")


# --------------------------------------------------------------------------------------- Gemini

_GOOGLE_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                  404: "NOT_FOUND", 408: "DEADLINE_EXCEEDED", 409: "ABORTED",
                  429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 501: "NOT_IMPLEMENTED",
                  503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
_GOOGLE_MESSAGES = {
    500: "An internal error has occurred. Please retry or report in "
         "https://developers.generativeai.google/guide/troubleshooting",
    503: "The model is overloaded. Please try again later.",
}
_RPC = "type.googleapis.com/google.rpc."
_RATE_HELP = {"@type": f"{_RPC}Help", "links": [
    {"description": "Learn more about Gemini API quotas",
     "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]}


def _violation(model: str, quota_id: str, metric: str, value: float | None) -> dict[str, Any]:
    violation = {"quotaMetric": f"generativelanguage.googleapis.com/{metric}", "quotaId": quota_id,
                 "quotaDimensions": {"location": "global", "model": model}}
    if value is not None:
        violation["quotaValue"] = f"{value:g}"
    return violation


class GeminiDialect(Dialect):
    name = "gemini"

    def call_from(self, path_model: str | None, headers: dict[str, str], query: dict[str, str],
                  body: Any) -> Call:
        contents = body.get("contents") if isinstance(body, dict) else None
        if not isinstance(contents, list) or not contents:
            raise BadCall("* GenerateContentRequest.contents: contents is not specified")
        system = _parts_text(body["systemInstruction"]) if body.get("systemInstruction") else ""
        config = body.get("generationConfig") or {}
        limit = config.get("maxOutputTokens") or config.get("max_output_tokens")
        key = headers.get("x-goog-api-key") or query.get("key")  # the API accepts both
        return Call("gemini", path_model or "", system, _parts_text(contents[-1]), limit, key,
                    config.get("temperature"), _sample_count(config.get("candidateCount")))

    def ok(self, call: Call, *, served: str, answers: Sequence[Completion],
           input_tokens: int, output_tokens: int) -> Canned:
        return json_reply(200, {
            "candidates": [{"content": {"parts": [{"text": answer.text}], "role": "model"},
                            "finishReason": "MAX_TOKENS" if answer.truncated else "STOP",
                            "index": n} for n, answer in enumerate(answers)],
            "usageMetadata": {"promptTokenCount": input_tokens,
                              "candidatesTokenCount": output_tokens,
                              "totalTokenCount": input_tokens + output_tokens,
                              "promptTokensDetails": [{"modality": "TEXT",
                                                       "tokenCount": input_tokens}]},
            "modelVersion": served, "responseId": f"emu{next_id()}",
        })

    def _error_body(self, status: int, message: str, details: list[Any] | None = None,
                    headers: tuple[tuple[str, str], ...] = ()) -> Canned:
        error: dict[str, Any] = {"code": status, "message": message,
                                 "status": _GOOGLE_STATUS.get(status, "UNKNOWN")}
        if details:
            error["details"] = details
        return json_reply(status, {"error": error}, headers)

    def error(self, status: int, message: str | None = None) -> Canned:
        return self._error_body(status, message or _GOOGLE_MESSAGES.get(status, f"HTTP {status}"))

    def rate_limited(self, call: Call, hint: Hint) -> Canned:
        message = ("You exceeded your current quota, please check your plan and billing details. "
                   "For more information on this error, head to: "
                   "https://ai.google.dev/gemini-api/docs/rate-limits.")
        details: list[Any] = [
            {"@type": f"{_RPC}QuotaFailure", "violations": [_violation(
                call.model, "GenerateRequestsPerMinutePerProjectPerModel",
                "generate_content_requests", hint.limit)]},
            _RATE_HELP]
        if hint.header_only:  # the HTTP-date variant: the hint travels as a header instead
            return self._error_body(429, message, details, (("retry-after", hint.header),))
        details.append({"@type": f"{_RPC}RetryInfo", "retryDelay": proto_duration(hint.seconds)})
        return self._error_body(429, f"{message} Please retry in {proto_duration(hint.seconds)}.",
                                details)

    def quota_exhausted(self, call: Call, per_day: int | None) -> Canned:
        metric = "generate_content_free_tier_requests"
        message = ("You exceeded your current quota, please check your plan and billing details. "
                   "For more information on this error, head to: "
                   "https://ai.google.dev/gemini-api/docs/rate-limits.\n"
                   f"* Quota exceeded for metric: generativelanguage.googleapis.com/{metric}, "
                   f"limit: {per_day if per_day is not None else 0}, model: {call.model}")
        return self._error_body(429, message, [
            {"@type": f"{_RPC}QuotaFailure", "violations": [_violation(
                call.model, "GenerateRequestsPerDayPerProjectPerModel-FreeTier", metric, per_day)]},
            _RATE_HELP,
            {"@type": f"{_RPC}RetryInfo", "retryDelay": "17s"},
        ])

    def unauthorized(self, key: str | None) -> Canned:
        if not key:
            return self._error_body(403, "Method doesn't allow unregistered callers (callers "
                                         "without established identity). Please use API Key or "
                                         "other form of API consumer identity to call this API.")
        message = "API key not valid. Please pass a valid API key."
        return self._error_body(400, message, [
            {"@type": f"{_RPC}ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
             "metadata": {"service": "generativelanguage.googleapis.com"}},
            {"@type": f"{_RPC}LocalizedMessage", "locale": "en-US", "message": message}])

    def model_missing(self, model: str) -> Canned:
        return self.error(404, f"models/{model} is not found for API version v1beta, or is not "
                               "supported for generateContent.")
