"""Prompt log-probabilities from an OpenAI-compatible server that returns them: vLLM's
``POST {base_url}/completions`` with its ``prompt_logprobs`` extension (the min-k probe).

The request asks for nothing to be sampled that matters (``max_tokens = 1``, greedy) and for
``prompt_logprobs = 0``: each prompt token's own log-probability and no alternatives. vLLM answers
``choices[0].prompt_logprobs``, one entry per prompt token, the first ``null`` (nothing precedes
it), each other a map from token id to ``{"logprob", "rank", "decoded_token"}`` that always holds
the prompt token itself; where ``choices[0].prompt_token_ids`` is present (vLLM's
``return_token_ids``) the entry is looked up by id. The text is tokenised by the server, with its
tokenizer's special tokens (a BOS where it adds one), as the local provider and the reference code
do.

A server returns at most its top alternatives, never the whole next-token distribution, so
Min-K%++'s mu and sigma are not known here: :class:`TextLogprobs` carries no means or stds, and
the probe computes Min-K% only (and says so in its stored parameters). OpenAI's own API has no
prompt log-probabilities at all: :func:`refusal` names it before anything is sent.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from contam.providers.base import Fatal, ModelSettings, TextLogprobs

__all__ = ["refusal", "payload", "text_logprobs_from", "OPENAI_HOSTS"]

# Hosts of OpenAI's own API (and Azure's): no prompt log-probabilities, no echo.
OPENAI_HOSTS = ("api.openai.com", ".openai.com", ".openai.azure.com")


def refusal(spec: ModelSettings, default_base_url: str) -> str | None:
    """A one-line reason when ``spec`` points at OpenAI's own API, else None."""
    urls = spec.base_url if isinstance(spec.base_url, tuple) else (spec.base_url,)
    for url in urls:
        host = urllib.parse.urlsplit(url or default_base_url).hostname or ""
        if host == OPENAI_HOSTS[0] or host.endswith(OPENAI_HOSTS[1:]):
            return (f"model {spec.name!r}: OpenAI's own API ({host}) returns no log-probabilities "
                    "of a given text; min-k needs provider = \"local\" or an OpenAI-compatible "
                    "server that returns prompt_logprobs (vLLM: base_url = "
                    "\"http://HOST:8000/v1\")")
    return None


def payload(model: str, text: str) -> dict[str, Any]:
    """The completions request that scores ``text`` (see the module docstring)."""
    return {"model": model, "prompt": text, "max_tokens": 1, "temperature": 0,
            "prompt_logprobs": 0}


def text_logprobs_from(body: Any, label: str) -> TextLogprobs:
    """The reply's prompt log-probabilities. A reply without them is Fatal (the server is not
    one that returns them); a malformed one raises KeyError/TypeError/ValueError for the caller's
    shape check."""
    choice = body["choices"][0]
    entries = choice.get("prompt_logprobs")
    if entries is None:
        raise Fatal(f"{label}: the server returned no prompt_logprobs; min-k needs a server "
                    "that returns them (vLLM's /v1/completions)")
    ids = choice.get("prompt_token_ids")
    scored = [_prompt_token(entry, ids[i] if ids else None)
              for i, entry in enumerate(entries) if i > 0]
    usage = body.get("usage") or {}
    return TextLogprobs(tokens=tuple(token for token, _ in scored),
                        logprobs=tuple(logprob for _, logprob in scored),
                        served_model=body.get("model"),
                        input_tokens=usage.get("prompt_tokens", len(entries)))


def _prompt_token(entry: dict[str, Any], token_id: int | None) -> tuple[str, float]:
    """(decoded token, log p) of the prompt token at one position."""
    if token_id is not None:
        found = entry[str(token_id)]
    elif len(entry) == 1:
        found = next(iter(entry.values()))
    else:
        raise ValueError(f"{len(entry)} candidates and no prompt_token_ids to tell the prompt "
                         "token among them")
    return str(found.get("decoded_token") or ""), float(found["logprob"])
