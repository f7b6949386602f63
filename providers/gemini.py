"""Google Gemini API ``generateContent`` (``POST {host}/v1beta/models/{model}:generateContent``).

The key travels in the ``x-goog-api-key`` header, never as ``?key=``. The system prompt goes in
``systemInstruction`` and the question is the single ``contents`` entry. Sampling ``params`` go
into ``generationConfig`` (``temperature``, ``maxOutputTokens``, ``seed``, ``thinkingConfig`` ...),
except ``safetySettings``, which the API takes at the top level. Gemini sends its rate-limit hint
in the 429 body (``RetryInfo.retryDelay``), and a ``QuotaFailure`` whose ``quotaId`` is per day
means the day's quota is gone: that stops the model instead of burning retries. A probe's request
adds ``generationConfig.temperature`` (over the config's) and ``candidateCount``: that many
candidates of one prompt, paid for once (at most 8; some models take only 1: lower the model's
``samples_per_request``).
"""

from __future__ import annotations

from typing import Any

import httpx

from contam.providers.base import ProviderError, Reply, Request
from contam.providers.hints import seconds_from_duration, seconds_from_retry_after
from contam.providers.transport import HTTPProvider, answer_text, error_for_status

__all__ = ["GeminiProvider"]

_TOP_LEVEL_PARAMS = {"safetySettings", "safety_settings"}
_OUTPUT_LIMIT_KEYS = ("maxOutputTokens", "max_output_tokens")
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure"


class GeminiProvider(HTTPProvider):
    """One ``generate`` = one generateContent call with exactly one ``contents`` entry."""

    key_env = "GEMINI_API_KEY"
    default_base_url = "https://generativelanguage.googleapis.com"
    reserved_params = frozenset({"model", "contents", "systemInstruction", "cachedContent",
                                 "candidateCount"})
    max_samples = 8  # the largest candidateCount the API accepts

    def served_model_id(self) -> str:
        return self.spec.model.removeprefix("models/")

    def endpoint(self) -> str:
        return f"{self.base_url}/v1beta/models/{self.served_model_id()}:generateContent"

    def headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self._api_key or ""}

    def payload(self, request: Request) -> dict[str, Any]:
        params = self.spec.params
        config = {k: v for k, v in params.items() if k not in _TOP_LEVEL_PARAMS}
        if request.max_output_tokens and not any(k in config for k in _OUTPUT_LIMIT_KEYS):
            config["maxOutputTokens"] = request.max_output_tokens
        if request.temperature is not None:
            config["temperature"] = request.temperature
        if request.samples > 1:
            config["candidateCount"] = request.samples
        body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": request.user}]}]}
        if request.system:
            body["systemInstruction"] = {"parts": [{"text": request.system}]}
        if config:
            body["generationConfig"] = config
        body.update({k: v for k, v in params.items() if k in _TOP_LEVEL_PARAMS})
        return body

    def reply_from(self, body: Any) -> Reply:
        usage = body.get("usageMetadata") or {}
        common = {"served_model": body.get("modelVersion"),
                  "input_tokens": usage.get("promptTokenCount"),
                  "output_tokens": _output_tokens(usage)}
        candidates = body.get("candidates")
        if not candidates:
            # A prompt blocked by safety filters is an answer of sorts (nothing came back),
            # not a fault: asking again gets the same verdict.
            reason = body["promptFeedback"]["blockReason"]
            return Reply(text="", finish_reason=f"blocked:{reason}", **common)
        ordered = sorted(candidates, key=lambda candidate: candidate.get("index", 0))
        return Reply.from_completions(
            [(_candidate_text(candidate), candidate.get("finishReason")) for candidate in ordered],
            **common)

    def error_from(self, response: httpx.Response) -> ProviderError:
        error = _error_object(self.error_body(response))
        details = [d for d in error.get("details") or [] if isinstance(d, dict)]
        hint = _retry_delay(details)
        if hint is None:  # Gemini itself sends none, but a proxy in front of it may
            hint = seconds_from_retry_after(response.headers.get("retry-after"))
        detail = str(error.get("message") or error.get("status") or "")
        quota = response.status_code == 429 and _per_day_quota(details)
        return error_for_status(response.status_code, detail, label=self.label,
                                retry_after_s=hint, quota=quota)


def _candidate_text(candidate: dict[str, Any]) -> str:
    """A candidate's answer text: its non-thought text parts. No text with a finishReason (SAFETY,
    RECITATION, MAX_TOKENS ...) is an empty answer; the reason is kept, and RECITATION is telling
    in a study of memorised text. No text with STOP (or no reason) is Gemini's empty-reply glitch:
    malformed, asked again; so is a text part whose text is null (:func:`answer_text`)."""
    parts = (candidate.get("content") or {}).get("parts") or []
    texts = [answer_text(part["text"], "candidates[].content.parts[].text")
             for part in parts if "text" in part and not part.get("thought")]
    reason = candidate.get("finishReason")
    if not texts and reason in (None, "STOP", "FINISH_REASON_UNSPECIFIED"):
        raise ValueError(f"a candidate has no text part (finishReason {reason})")
    return "".join(texts)


def _output_tokens(usage: dict[str, Any]) -> int | None:
    """Answer plus thinking tokens: both are generated and billed, as OpenAI counts them."""
    answer, thoughts = usage.get("candidatesTokenCount"), usage.get("thoughtsTokenCount")
    if answer is None and thoughts is None:
        return None
    return (answer or 0) + (thoughts or 0)


def _error_object(body: Any) -> dict[str, Any]:
    """``{"error": {...}}``; some Google front ends wrap it in a one-element list."""
    if isinstance(body, list) and body:
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {"message": str(body or "")}


def _retry_delay(details: list[dict[str, Any]]) -> float | None:
    for detail in details:
        if detail.get("@type") == _RETRY_INFO:
            return seconds_from_duration(str(detail.get("retryDelay", "")))
    return None


def _per_day_quota(details: list[dict[str, Any]]) -> bool:
    """True when a QuotaFailure names a per-day quota (``...PerDay...`` / ``..._per_day``)."""
    for detail in details:
        if detail.get("@type") != _QUOTA_FAILURE:
            continue
        for violation in detail.get("violations") or []:
            names = f"{violation.get('quotaId', '')} {violation.get('quotaMetric', '')}".lower()
            if "perday" in names or "per_day" in names:
                return True
    return False
