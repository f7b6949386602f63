"""The one interface every wire protocol speaks to the harness.

A provider module holds one class with one ``async generate(request) -> Reply``. It receives its
``httpx.AsyncClient`` from the engine (so connection pools and limits are the engine's business),
builds the payload from a :class:`Request` alone (R1: nothing else can reach it), and classifies its
own failures into one of the :class:`ProviderError` subclasses below. The engine decides what to do
with each class; providers never retry or sleep themselves.
"""

from __future__ import annotations

import base64
import json
import os
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "ModelSettings",
    "Request",
    "Reply",
    "TextLogprobs",
    "Provider",
    "ProviderError",
    "RateLimited",
    "Transient",
    "Timeout",
    "QuotaExhausted",
    "Fatal",
    "ServedModelMismatch",
    "MissingKey",
    "BadKey",
    "Unreachable",
    "resolve_api_key",
    "register_secret",
    "secret_forms",
    "served_model_matches",
    "redact",
]


class ModelSettings(Protocol):
    """What a provider reads of one configured model (``contam.harness.config.ModelSpec`` fits it)."""

    name: str  # the user's label, stored in `model`
    provider: str
    model: str  # the provider's model id
    base_url: str | None
    api_key_env: str | None
    timeout_s: float
    params: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Request:
    """Everything a provider may send. R1 holds by construction: there is no field for history,
    references, other rows or tools (R2)."""

    system: str
    user: str
    max_output_tokens: int | None = None
    # A probe's sampling: the temperature wins over the model's configured one (None: the
    # config's), and ``samples`` completions of this one prompt come back in one reply where
    # the API has a multi-sample field (OpenAI ``n``, Gemini ``candidateCount``); a provider
    # without one is never asked for more than ``Provider.max_samples`` (1).
    temperature: float | None = None
    samples: int = 1
    # Which of the prompt's samples these are (a probe's sample numbers, as many as ``samples``;
    # empty: 0 .. samples - 1). A provider that seeds each sample (local) draws sample k alike
    # however the samples were split into requests; the HTTP APIs ignore it.
    sample_numbers: tuple[int, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Reply:
    text: str  # verbatim, becomes `answer_raw`; the first completion of a multi-sample reply
    served_model: str | None
    finish_reason: str | None = None
    input_tokens: int | None = None  # of the whole request
    output_tokens: int | None = None  # of the whole request, every completion together
    http_status: int | None = 200
    # Every completion of a multi-sample reply, in the API's order, with its finish reason;
    # empty for a reply of one completion (``text`` and ``finish_reason`` are it).
    texts: tuple[str, ...] = ()
    finish_reasons: tuple[str | None, ...] = ()

    @classmethod
    def from_completions(cls, completions: Sequence[tuple[str, str | None]],
                         **fields: Any) -> Reply:
        """The reply of these (text, finish reason) completions, in the API's order (at least
        one): the first is ``text`` and ``finish_reason``; ``texts`` and ``finish_reasons`` hold
        them all when there are several, and stay empty for one."""
        texts = tuple(text for text, _ in completions)
        reasons = tuple(reason for _, reason in completions)
        several = len(completions) > 1
        return cls(text=texts[0], finish_reason=reasons[0], texts=texts if several else (),
                   finish_reasons=reasons if several else (), **fields)

    def completions(self) -> tuple[tuple[str, str | None], ...]:
        """(text, finish reason) of each completion: the several of a multi-sample reply, else
        the one."""
        if not self.texts:
            return ((self.text, self.finish_reason),)
        reasons = self.finish_reasons or (None,) * len(self.texts)
        return tuple(zip(self.texts, reasons))


@dataclass(frozen=True, kw_only=True)
class TextLogprobs:
    """What a model makes of a given text, token by token (the min-k probe): one entry per scored
    token, i.e. every token of the text but the first, which nothing precedes. ``means`` and
    ``stds`` are, per position, the mean and standard deviation of log p(z) for z drawn from the
    model's next-token distribution (Min-K%++); None where the provider cannot know them."""

    tokens: tuple[str, ...]
    logprobs: tuple[float, ...]
    means: tuple[float, ...] | None = None
    stds: tuple[float, ...] | None = None
    served_model: str | None = None
    input_tokens: int | None = None  # the whole text, the unscored first token included
    http_status: int | None = 200


class ProviderError(Exception):
    """A failed attempt, already classified. ``outcome`` is the `attempts.outcome` value."""

    outcome = "fatal"
    retryable = False

    def __init__(self, message: str, *, http_status: int | None = None,
                 retry_after_s: float | None = None) -> None:
        super().__init__(redact(message))
        self.http_status = http_status
        self.retry_after_s = retry_after_s


class RateLimited(ProviderError):
    """429 (or equivalent). ``retry_after_s`` is the server's hint, the minimum wait, if any."""

    outcome = "rate_limited"
    retryable = True


class Transient(ProviderError):
    """5xx, 529, 408/409, connection resets, malformed bodies, timeouts: worth another try."""

    outcome = "transient"
    retryable = True


class Timeout(Transient):
    outcome = "timeout"


class QuotaExhausted(ProviderError):
    """Quota for the day is gone: stop this model cleanly; the run resumes later."""

    outcome = "quota"


class Fatal(ProviderError):
    """Auth failures and 4xx other than 408/409/429: retrying cannot help; stop this model."""

    outcome = "fatal"


class ServedModelMismatch(Fatal):
    """The server answered with a different model than the one asked for."""


class MissingKey(Fatal):
    """The key's environment variable is unset or empty."""


class BadKey(Fatal):
    """The key holds a character no HTTP header may carry (a control, a space, non-ASCII)."""


class Unreachable(Fatal):
    """The server accepts no connection, and the provider's preflight holds that no wait can
    mend (Ollama: a local server nobody started); its lane stops as unreachable."""


class Provider:
    """The base of every provider class (one per module, built once per configured model).
    ``generate`` is what a provider must do; the hooks' defaults fit a provider with nothing more
    to say, and a provider overrides the ones it has."""

    spec: ModelSettings
    # The most completions one request may ask for (``Request.samples``): the API's
    # multi-sample field's limit, 1 where it has none (the probe job then sends one request per
    # completion).
    max_samples: int = 1
    # Whether it can sample at a temperature above 0 (a local model decodes greedily only).
    can_sample: bool = True

    @classmethod
    def resolve_key(cls, spec: ModelSettings) -> str | None:
        """The key from the environment, or MissingKey before anything is sent. Default: no key."""
        return None

    def served_model_id(self) -> str:
        """The id a reply's ``served_model`` must match (see registry.check_first_reply)."""
        return self.spec.model

    async def preflight(self) -> str | None:
        """Checked once before the lane starts: a one-line report, or None when nothing to say."""
        return None

    async def generate(self, request: Request) -> Reply:
        raise NotImplementedError

    def check_samples(self, request: Request) -> None:
        """Fatal when ``request`` asks for more completions than one request of this API can
        carry (the probe job splits by :attr:`max_samples`, so this is a caller's bug)."""
        if request.samples > self.max_samples:
            raise Fatal(f"model {self.spec.name!r}: {request.samples} completions asked of one "
                        f"{self.spec.provider} request; it carries at most {self.max_samples}")

    # Where ``text_logprobs`` gets its numbers, as the min-k probe's parameters name it:
    # "forward" (a forward pass: the whole next-token distribution too), "prompt_logprobs" (a
    # server's, each token's own only); None: this provider gives none.
    text_logprobs_source: str | None = None

    @classmethod
    def text_logprobs_refusal(cls, spec: ModelSettings) -> str | None:
        """Why ``spec`` cannot give the log-probabilities of a given text's tokens (min-k), in one
        line, or None when it can; asked before anything is sent. Default: it can exactly when
        the class names a :attr:`text_logprobs_source`."""
        if cls.text_logprobs_source is not None:
            return None
        return (f"model {spec.name!r}: provider {spec.provider!r} gives no log-probabilities of a "
                "given text")

    async def text_logprobs(self, text: str) -> TextLogprobs:
        """The log-probabilities of ``text``'s tokens; only where the refusal above is None."""
        raise Fatal(self.text_logprobs_refusal(self.spec) or "text_logprobs is not implemented")


def resolve_api_key(spec: ModelSettings, default_env: str | None = None, *,
                    required: bool = True) -> str | None:
    """The key from ``spec.api_key_env``, else ``default_env`` (the provider's conventional
    variable), checked before anything is sent. Raised errors name the variable, never a value."""
    env_name = spec.api_key_env or default_env
    key = os.environ.get(env_name, "").strip() if env_name else ""
    if key:
        register_secret(key)  # first: even a refused key is scrubbed from anything printed
        _refuse_bad_key(spec, env_name, key)
        return key
    if required:
        raise MissingKey(f"model {spec.name!r}: environment variable {env_name} is not set")
    return None


def _refuse_bad_key(spec: ModelSettings, env_name: str | None, key: str) -> None:
    """Keys are printable ASCII without spaces; anything else would break (or inject into) the
    request's headers, and httpx's complaint would quote the key."""
    for char in key:
        if not "!" <= char <= "~":
            raise BadKey(f"model {spec.name!r}: environment variable {env_name} holds "
                         f"{_describe(char)}; a key is printable ASCII without spaces")


def _describe(char: str) -> str:
    if char.isspace():
        return "whitespace inside the key"
    if ord(char) < 0x20 or ord(char) == 0x7F:
        return "a control character"
    return "a non-ASCII character"


_DATED_SUFFIX = re.compile(r"-\d{4}-?\d{2}-?\d{2}$|-\d{8}$")


def served_model_matches(requested: str, served: str) -> bool:
    """Equal, or the requested id extended by a dated suffix (``-2026-01-01`` / ``-20260101``)."""
    if served == requested:
        return True
    return served.startswith(requested) and bool(_DATED_SUFFIX.fullmatch(served[len(requested):]))


# Every form of every key resolve_api_key read: redact() scrubs them from any text that leaves
# the process.
_REGISTERED_SECRETS: set[str] = set()


# Shorter strings are no real key and would garble ordinary words if replaced.
_MIN_SECRET_LENGTH = 8


def register_secret(secret: str) -> None:
    """Remember a secret in every spelling an error message may quote it in."""
    _REGISTERED_SECRETS.update(form for form in secret_forms(secret)
                               if len(form) >= _MIN_SECRET_LENGTH)


def secret_forms(secret: str) -> set[str]:
    """The secret as written, as ``repr`` of the str and of its bytes (``\\n``, ``\\x1b``,
    ``\\u202e``), JSON-escaped, percent-encoded and base64-encoded: the forms exception messages
    and servers echoing a request back quote."""
    utf8 = secret.encode("utf-8", "surrogatepass")
    return {secret, repr(secret)[1:-1], repr(utf8)[2:-1], secret.encode("unicode_escape").decode(),
            json.dumps(secret)[1:-1], urllib.parse.quote(secret, safe=""),
            urllib.parse.quote_plus(secret, safe=""), *_base64_forms(utf8)}


def _base64_forms(data: bytes) -> set[str]:
    """``data`` in base64, standard and URL-safe: whole (with and without its ``=`` padding), and
    as it reads inside a longer encoded string (``Basic base64(user:key)``) at each of the three
    byte alignments, where only the characters that depend on ``data`` alone are fixed."""
    forms = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(data).decode("ascii")
        forms |= {whole, whole.rstrip("=")}
        forms |= {_aligned_core(encode, data, offset) for offset in range(3)}
    return forms


def _aligned_core(encode: Any, data: bytes, offset: int) -> str:
    """The 4-character groups of ``encode(prefix + data)`` made of ``data``'s bytes only, when
    ``data`` starts ``offset`` bytes into a group (the groups it shares with its neighbours
    vary with them, and are left out: at most two bytes of each end)."""
    encoded = encode(bytes(offset) + data).decode("ascii")
    first_group = 1 if offset else 0
    end_group = (offset + len(data)) // 3
    return encoded[4 * first_group:4 * end_group]


def redact(text: str) -> str:
    # Longest first: a short form inside a longer one must not leave the longer one's rest.
    for secret in sorted(_REGISTERED_SECRETS, key=len, reverse=True):
        text = text.replace(secret, "[REDACTED]")
    return text
