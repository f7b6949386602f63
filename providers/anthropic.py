"""Anthropic Messages API (``POST {host}/v1/messages``).

Headers ``x-api-key`` and ``anthropic-version: 2023-06-01``. The system prompt is the top-level
``system`` field and the question the single user message. ``max_tokens`` is required by the API:
``params["max_tokens"]`` when the config sets it, else the request's limit, else 1024. Other
sampling ``params`` (``temperature``, ``top_p``, ``top_k``, ``stop_sequences`` ...) are top-level.
A probe's ``temperature`` wins over the config's. The API has no multi-sample field: a probe sends
one request per completion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from contam.providers.base import ProviderError, Reply, Request
from contam.providers.hints import first_header_hint, longest, seconds_from_retry_after, seconds_until_timestamp
from contam.providers.transport import HTTPProvider, answer_text, error_for_status

__all__ = ["AnthropicProvider", "ANTHROPIC_VERSION", "DEFAULT_MAX_TOKENS"]

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024
# Spend limits answer 400 "You have reached your specified API usage limits. You will regain
# access on <date>": the account is stopped until then, which retrying cannot change.
_QUOTA_PHRASES = ("usage limits", "regain access")
_RESET_HEADERS = ("anthropic-ratelimit-requests-reset", "anthropic-ratelimit-tokens-reset",
                  "anthropic-ratelimit-input-tokens-reset", "anthropic-ratelimit-output-tokens-reset")


class AnthropicProvider(HTTPProvider):
    """One ``generate`` = one Messages call with exactly one user message."""

    key_env = "ANTHROPIC_API_KEY"
    default_base_url = "https://api.anthropic.com"
    reserved_params = frozenset({"model", "messages", "system", "stream"})

    def endpoint(self) -> str:
        return f"{self.base_url}/v1/messages"

    def headers(self) -> dict[str, str]:
        return {"x-api-key": self._api_key or "", "anthropic-version": ANTHROPIC_VERSION}

    def payload(self, request: Request) -> dict[str, Any]:
        max_tokens = self.spec.params.get("max_tokens") or request.max_output_tokens or DEFAULT_MAX_TOKENS
        body: dict[str, Any] = {"model": self.spec.model, "max_tokens": max_tokens,
                                "messages": [{"role": "user", "content": request.user}]}
        if request.system:
            body["system"] = request.system
        if request.temperature is not None:
            body["temperature"] = request.temperature
        return {**self.spec.params, **body}

    def reply_from(self, body: Any) -> Reply:
        # Only text blocks are the answer; thinking blocks are the model's scratchpad. No text
        # block at all (`content: []`) is a model that said nothing: a blank answer.
        content = body["content"]
        if not isinstance(content, list):
            raise TypeError(f"content is {type(content).__name__}, not a list")
        text = "".join(answer_text(block.get("text"), "content[].text") for block in content
                       if block.get("type") == "text")
        usage = body.get("usage") or {}
        return Reply(text=text, served_model=body.get("model"),
                     finish_reason=body.get("stop_reason"),
                     input_tokens=usage.get("input_tokens"),
                     output_tokens=usage.get("output_tokens"))

    def error_from(self, response: httpx.Response) -> ProviderError:
        body = self.error_body(response)
        error = self.nested_error(body)
        detail = str(error.get("message") or error.get("type") or body or "")
        quota = response.status_code in (400, 429) and any(
            phrase in detail.lower() for phrase in _QUOTA_PHRASES)
        return error_for_status(response.status_code, detail, label=self.label,
                                retry_after_s=_hint(response.headers), quota=quota)


def _hint(headers: Mapping[str, str]) -> float | None:
    """``retry-after`` first; without it, the latest reset time among the exhausted limits."""
    hint = first_header_hint(headers, [("retry-after", seconds_from_retry_after)])
    if hint is not None:
        return hint
    return longest(seconds_until_timestamp(headers.get(name)) for name in _RESET_HEADERS
                   if headers.get(name.replace("-reset", "-remaining"), "0").strip() == "0")
