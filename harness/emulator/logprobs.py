"""vLLM's ``POST /v1/completions`` with prompt log-probabilities, as the emulator serves it (the
min-k probe's wire, see :mod:`contam.providers.openai_logprobs`).

The reply has vLLM's shape: ``choices[0].prompt_logprobs`` holds, per prompt token, ``null`` for the
first and then ``{token id: {"logprob", "rank", "decoded_token"}}`` with the prompt token and, for
``prompt_logprobs = k``, the k most likely alternatives; ``choices[0].text`` is a stand-in
continuation (the words of :func:`default_answer`, one per requested token). Limits and refusals
follow vLLM's defaults: ``prompt_logprobs`` above 20 (``--max-logprobs``) or -1 (the whole
vocabulary) is a 400, as is a negative value; ``echo`` and ``stream`` are not emulated (a 400 says
so).

Tokens are words and punctuation marks with their leading white space. The log-probability of
each token is seeded noise, ``scale * ln(u)`` for u uniform in (0, 1] drawn from (seed, model,
text, position), independent from one text to the next (noise keyed by the token alone would give
every item of a title the same value at the title's tokens, a difference between subsets that no
memorisation made). ``scale`` is :data:`MEMORISED_SCALE` when the emulator's knowledge says the
text is about an item the model memorised (``Knowledge.item_for`` and ``Knowledge.memorised``),
:data:`UNSEEN_SCALE` otherwise. So a contaminated profile gives its memorised (documented) items'
texts markedly higher log-probabilities than the fan items', a clean profile (which memorises
nothing) gives every text the same distribution, and an emulator without knowledge treats every
text as unseen.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
import zlib
from dataclasses import dataclass
from typing import Any

from contam.harness.emulator.apis import BadCall, Call, Canned, OpenAIDialect, bearer, json_reply
from contam.harness.emulator.settings import ItemKnowledge, default_answer

__all__ = ["CompletionsCall", "CompletionsDialect", "prompt_tokens", "token_logprob",
           "MEMORISED_SCALE", "UNSEEN_SCALE", "MAX_LOGPROBS"]

MEMORISED_SCALE = 0.4  # mean -log p of a memorised text's token
UNSEEN_SCALE = 2.5  # mean -log p of any other text's token
MAX_LOGPROBS = 20  # vLLM's default --max-logprobs
_TOKEN = re.compile(r"\s*(?:\w+|[^\w\s])")


@dataclass(frozen=True, slots=True)
class CompletionsCall(Call):
    """A completions call: the prompt is ``question``; how many alternatives it wants."""

    prompt_logprobs: int | None = None


def prompt_tokens(text: str) -> list[str]:
    """The emulator's tokenisation: words and punctuation marks with their leading white space."""
    return _TOKEN.findall(text)


def _token_id(token: str) -> int:
    return zlib.crc32(token.encode("utf-8")) % 100_000 + 10


def _uniform(*key: Any) -> float:
    """A number in (0, 1] that depends on ``key`` alone (the same in every process)."""
    digest = hashlib.blake2b("\x1f".join(map(str, key)).encode("utf-8"), digest_size=8).digest()
    return (int.from_bytes(digest, "big") + 1) / 2**64


def token_logprob(seed: int, model: str, text: str, position: int, memorised: bool) -> float:
    """The emulated log p of the token at ``position`` of ``text`` (see the module docstring)."""
    scale = MEMORISED_SCALE if memorised else UNSEEN_SCALE
    return scale * math.log(_uniform(seed, model, text, position))


class CompletionsDialect(OpenAIDialect):
    """``/v1/completions`` in vLLM's dialect; errors, rate limits and quota as OpenAI's (which
    vLLM's server imitates). One per emulator: it holds the emulator's knowledge and seed."""

    wants_answers = False  # the continuation is a stand-in: the server draws no answers for it

    def __init__(self, knowledge: ItemKnowledge | None, seed: int | None) -> None:
        self.knowledge, self.seed = knowledge, seed or 0

    def call_from(self, path_model: str | None, headers: dict[str, str], query: dict[str, str],
                  body: Any) -> Call:
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            raise BadCall("you must provide a model parameter")
        for unsupported in ("echo", "stream"):
            if body.get(unsupported):
                raise BadCall(f"'{unsupported}' is not emulated for /v1/completions")
        return CompletionsCall("openai", body["model"], "", _prompt(body.get("prompt")),
                               body.get("max_tokens", 16), bearer(headers),
                               prompt_logprobs=_prompt_logprobs(body.get("prompt_logprobs")))

    def ok(self, call: Call, *, served: str, **_answers: Any) -> Canned:
        """The reply; it has no answers to use (the continuation is a stand-in)."""
        tokens = prompt_tokens(call.question)
        words = default_answer(call.question).split()
        limit = call.max_tokens if call.max_tokens is not None else len(words)
        assert isinstance(call, CompletionsCall)  # call_from's, by construction
        wanted = call.prompt_logprobs
        prompt_logprobs = None if wanted is None else self._prompt_logprobs(call, tokens, wanted)
        choice = {"index": 0, "text": "".join(f" {w}" for w in words[:limit]), "logprobs": None,
                  "finish_reason": "length" if limit < len(words) else "stop", "stop_reason": None,
                  "prompt_logprobs": prompt_logprobs}
        completion_tokens = min(limit, len(words))
        return json_reply(200, {
            "id": f"cmpl-emu{zlib.crc32(call.question.encode('utf-8')):08x}",
            "object": "text_completion", "created": int(time.time()), "model": served,
            "choices": [choice], "service_tier": None, "system_fingerprint": None,
            "usage": {"prompt_tokens": len(tokens), "total_tokens": len(tokens) + completion_tokens,
                      "completion_tokens": completion_tokens, "prompt_tokens_details": None},
            "kv_transfer_params": None})

    def _prompt_logprobs(self, call: Call, tokens: list[str], alternatives: int) -> list[Any]:
        memorised = self._memorised(call.question)
        entries: list[Any] = [None]
        for position, token in enumerate(tokens[1:], start=1):
            logprob = token_logprob(self.seed, call.model, call.question, position, memorised)
            entries.append(_entry(token, logprob, alternatives, position))
        return entries

    def _memorised(self, text: str) -> bool:
        if self.knowledge is None:
            return False
        item = self.knowledge.item_for(text)
        return item is not None and self.knowledge.memorised(item)


def _entry(token: str, logprob: float, alternatives: int, position: int) -> dict[str, Any]:
    """One position's map: the prompt token and the vocabulary's ``alternatives`` most likely
    tokens (the prompt token among them where its rank is within them, as in vLLM). The other
    tokens share the rest of the probability mass, halving from one to the next."""
    rest = -math.expm1(logprob)  # 1 - p, without cancellation near p = 1
    others = [(f" alt{position}_{j}", math.log(rest * 0.5**j))
              for j in range(1, alternatives + 1)] if rest > 0 else []
    rank = 1 + sum(other > logprob for _, other in others)
    entry = {}
    for n, (text, other) in enumerate(others, start=1):  # most likely first
        other_rank = n + (n >= rank)
        if other_rank <= alternatives:
            entry[str(_token_id(text))] = {"logprob": other, "rank": other_rank,
                                           "decoded_token": text}
    entry[str(_token_id(token))] = {"logprob": logprob, "rank": rank, "decoded_token": token}
    return entry


def _prompt(value: Any) -> str:
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, str) or not value:
        raise BadCall("'prompt' must be a non-empty string (token ids and batches are not emulated)")
    return value


def _prompt_logprobs(value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadCall("`prompt_logprobs` must be an integer.")
    if value < 0 and value != -1:
        raise BadCall("`prompt_logprobs` must be a positive value or -1.")
    if value == -1 or value > MAX_LOGPROBS:
        asked = "the whole vocabulary (-1)" if value == -1 else str(value)
        raise BadCall(f"Requested prompt logprobs of {asked}, which is greater than max "
                      f"allowed: {MAX_LOGPROBS}")
    return value
