"""The emulator's Anthropic Messages and Ollama generate dialects: the two APIs without a
multi-sample field (a reply is one answer). Same contract as :mod:`contam.harness.emulator.apis`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from contam.harness.emulator.apis import (
    BadCall, Call, Canned, Completion, Dialect, Hint, bearer, json_reply, next_id, now_rfc3339,
    text_of,
)

__all__ = ["AnthropicDialect", "OllamaDialect"]


# ------------------------------------------------------------------------------------ Anthropic

_ANTHROPIC_ERRORS = {400: "invalid_request_error", 401: "authentication_error",
                     402: "billing_error", 403: "permission_error", 404: "not_found_error",
                     413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
                     504: "timeout_error", 529: "overloaded_error"}
_ANTHROPIC_MESSAGES = {500: "Internal server error", 529: "Overloaded"}


class AnthropicDialect(Dialect):
    name = "anthropic"

    def call_from(self, path_model: str | None, headers: dict[str, str], query: dict[str, str],
                  body: Any) -> Call:
        if "anthropic-version" not in headers:
            raise BadCall("anthropic-version: header is required")
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            raise BadCall("model: Field required")
        if not isinstance(body.get("max_tokens"), int):
            raise BadCall("max_tokens: Field required")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadCall("messages: Field required")
        system = body.get("system") or ""
        users = [text_of(m.get("content")) for m in messages if m.get("role") == "user"]
        return Call("anthropic", body["model"], text_of(system), users[-1] if users else "",
                    body["max_tokens"], headers.get("x-api-key") or bearer(headers),
                    body.get("temperature"))

    def ok(self, call: Call, *, served: str, answers: Sequence[Completion],
           input_tokens: int, output_tokens: int) -> Canned:
        answer = answers[0]  # no multi-sample field
        return json_reply(200, {
            "id": f"msg_emu{next_id()}", "type": "message", "role": "assistant", "model": served,
            "content": [{"type": "text", "text": answer.text}],
            "stop_reason": "max_tokens" if answer.truncated else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": output_tokens,
                      "service_tier": "standard"},
        }, (("request-id", f"req_emu{next_id()}"),))

    def _error_body(self, status: int, message: str,
                    headers: tuple[tuple[str, str], ...] = ()) -> Canned:
        kind = _ANTHROPIC_ERRORS.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return json_reply(status, {"type": "error", "error": {"type": kind, "message": message},
                                   "request_id": f"req_emu{next_id()}"}, headers)

    def error(self, status: int, message: str | None = None) -> Canned:
        return self._error_body(status, message or _ANTHROPIC_MESSAGES.get(status, f"HTTP {status}"))

    def rate_limited(self, call: Call, hint: Hint) -> Canned:
        limit = f"{hint.limit:g}" if hint.limit else "1"
        headers = (("retry-after", hint.header),
                   ("anthropic-ratelimit-requests-limit", limit),
                   ("anthropic-ratelimit-requests-remaining", "0"),
                   ("anthropic-ratelimit-requests-reset", now_rfc3339(math.ceil(hint.seconds))))
        return self._error_body(
            429, f"This request would exceed the rate limit for your organization (emulator) of "
                 f"{limit} requests per minute. For details, refer to: "
                 "https://docs.claude.com/en/api/rate-limits.", headers)

    def quota_exhausted(self, call: Call, per_day: int | None) -> Canned:
        tomorrow = (datetime.now(timezone.utc) + timedelta(days=1)).strftime("%Y-%m-%d")
        return self._error_body(400, "You have reached your specified API usage limits. You will "
                                     f"regain access on {tomorrow} at 00:00 UTC.")

    def unauthorized(self, key: str | None) -> Canned:
        return self._error_body(401, "invalid x-api-key" if key else "x-api-key header is required")

    def model_missing(self, model: str) -> Canned:
        return self.error(404, f"model: {model}")


# --------------------------------------------------------------------------------------- Ollama

class OllamaDialect(Dialect):
    name = "ollama"

    def call_from(self, path_model: str | None, headers: dict[str, str], query: dict[str, str],
                  body: Any) -> Call:
        if not isinstance(body, dict) or not body.get("model"):
            raise BadCall("model is required")
        options = body.get("options") or {}
        key = bearer(headers)
        return Call("ollama", str(body["model"]), str(body.get("system") or ""),
                    str(body.get("prompt") or ""), options.get("num_predict"), key,
                    options.get("temperature"))

    def ok(self, call: Call, *, served: str, answers: Sequence[Completion],
           input_tokens: int, output_tokens: int) -> Canned:
        answer = answers[0]  # no multi-sample field
        return json_reply(200, {
            "model": served,
            "created_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "response": answer.text, "done": True,
            "done_reason": "length" if answer.truncated else "stop",
            "context": [1, 2, 3], "total_duration": 1_000_000, "load_duration": 100_000,
            "prompt_eval_count": input_tokens, "prompt_eval_duration": 200_000,
            "eval_count": output_tokens, "eval_duration": 700_000,
        })

    def error(self, status: int, message: str | None = None) -> Canned:
        return json_reply(status, {"error": message or f"HTTP {status}"})

    def rate_limited(self, call: Call, hint: Hint) -> Canned:
        return json_reply(429, {"error": "too many requests, please retry later"},
                          (("retry-after", hint.header),))

    def quota_exhausted(self, call: Call, per_day: int | None) -> Canned:
        return self.error(429, "you (emulator) have reached your weekly usage limit, upgrade for "
                               "higher limits: https://ollama.com/upgrade")

    def unauthorized(self, key: str | None) -> Canned:
        return self.error(401, "unauthorized")
