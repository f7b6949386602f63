"""OpenAI Chat Completions (``POST {base_url}/chat/completions``), and any server that speaks it.

vLLM, llama.cpp's server and most gateways accept the same request, so ``base_url`` (which
includes ``/v1``) is all it takes to point this provider elsewhere. Sampling ``params`` become
top-level fields (``temperature``, ``seed``, ``top_p``, ``max_completion_tokens`` ...). A probe's
request adds its own ``temperature`` (over the config's) and ``n``: that many choices of one prompt,
which is paid for once (at most 128, the API's limit). The min-k probe's prompt log-probabilities
come from vLLM's ``/completions`` instead (:mod:`contam.providers.openai_logprobs`); OpenAI's own API has
none and is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from contam.providers import openai_logprobs
from contam.providers.base import ModelSettings, ProviderError, Reply, Request, TextLogprobs
from contam.providers.hints import (
    first_header_hint,
    longest,
    seconds_from_duration,
    seconds_from_retry_after,
)
from contam.providers.transport import HTTPProvider, answer_text, error_for_status

__all__ = ["OpenAIProvider"]

# Error codes that mean the account's quota or budget is gone, not that it is going too fast.
_QUOTA_CODES = {"insufficient_quota", "billing_hard_limit_reached"}
_OUTPUT_LIMIT_KEYS = ("max_completion_tokens", "max_tokens")


def _millis(value: str | None) -> float | None:
    seconds = seconds_from_retry_after(value)
    return None if seconds is None else seconds / 1000


class OpenAIProvider(HTTPProvider):
    """One ``generate`` = one Chat Completions call with a system and a single user message."""

    key_env = "OPENAI_API_KEY"
    default_base_url = "https://api.openai.com/v1"
    reserved_params = frozenset({"model", "messages", "stream", "stream_options", "n"})
    max_samples = 128  # the API's limit on n

    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._api_key}"}

    def payload(self, request: Request) -> dict[str, Any]:
        messages = [{"role": "user", "content": request.user}]
        if request.system:
            messages.insert(0, {"role": "system", "content": request.system})
        body: dict[str, Any] = {"model": self.spec.model, "messages": messages}
        if request.max_output_tokens and not any(k in self.spec.params for k in _OUTPUT_LIMIT_KEYS):
            body["max_completion_tokens"] = request.max_output_tokens
        return {**body, **self.spec.params, **_sampling(request)}

    def reply_from(self, body: Any) -> Reply:
        choices = sorted(body["choices"], key=lambda choice: choice.get("index", 0))
        usage = body.get("usage") or {}
        return Reply.from_completions(
            [(_choice_text(choice), choice.get("finish_reason")) for choice in choices],
            served_model=body.get("model"), input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"))

    text_logprobs_source = "prompt_logprobs"  # vLLM's; each token's own log p only

    @classmethod
    def text_logprobs_refusal(cls, spec: ModelSettings) -> str | None:
        """OpenAI's own API is refused; any other server is asked (vLLM returns prompt
        log-probabilities; one that does not is stopped on its first reply)."""
        return openai_logprobs.refusal(spec, cls.default_base_url)

    async def text_logprobs(self, text: str) -> TextLogprobs:
        """vLLM's ``/completions`` with ``prompt_logprobs`` (:mod:`contam.providers.openai_logprobs`)."""
        return await self.post_json(f"{self.base_url}/completions",
                               openai_logprobs.payload(self.spec.model, text),
                               lambda body: openai_logprobs.text_logprobs_from(body, self.label))

    def error_from(self, response: httpx.Response) -> ProviderError:
        body = self.error_body(response)
        error = self.nested_error(body)
        detail = str(error.get("message") or body or "")
        quota = response.status_code == 429 and (
            error.get("code") in _QUOTA_CODES or error.get("type") in _QUOTA_CODES)
        return error_for_status(response.status_code, detail, label=self.label,
                                retry_after_s=_hint(response.headers), quota=quota)


def _sampling(request: Request) -> dict[str, Any]:
    """A probe's temperature and number of choices; nothing for a plain question."""
    fields: dict[str, Any] = {}
    if request.temperature is not None:
        fields["temperature"] = request.temperature
    if request.samples > 1:
        fields["n"] = request.samples
    return fields


def _choice_text(choice: dict[str, Any]) -> str:
    """A choice's answer text: ``content``; a refusal arrives in its own field with content null;
    content null for ``content_filter`` is blank (asking again gets the same verdict, as for
    Gemini's blocked prompt); any other null is malformed (:func:`answer_text`)."""
    message = choice["message"]
    text = message.get("content")
    if text is None:
        text = message.get("refusal")
    if text is None and choice.get("finish_reason") == "content_filter":
        text = ""
    return answer_text(text, "choices[].message.content")


def _hint(headers: Mapping[str, str]) -> float | None:
    """``retry-after-ms``, then ``Retry-After``, then the reset time of whichever limit ran out."""
    hint = first_header_hint(headers, [("retry-after-ms", _millis),
                                       ("retry-after", seconds_from_retry_after)])
    if hint is not None:
        return hint
    resets = []
    for limit in ("requests", "tokens"):
        remaining = headers.get(f"x-ratelimit-remaining-{limit}")
        if remaining is None or remaining.strip() == "0":
            resets.append(seconds_from_duration(headers.get(f"x-ratelimit-reset-{limit}")))
    return longest(resets)
