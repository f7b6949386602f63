"""HTTP plumbing shared by the four wire-protocol providers.

Everything that is the same for every provider lives here, once: sending a request and translating
httpx's exceptions into the error hierarchy of :mod:`contam.providers.base` (the only place in the package
that catches them), decoding a JSON body, mapping an HTTP status onto a retry decision, and refusing
sampling parameters that would break R1 or R2. :class:`HTTPProvider` strings them together; each
provider module subclasses it and supplies only its own dialect: URL, headers, payload, reply
parsing and how its error bodies spell their message, hint and quota.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar, TypeVar

import httpx
import orjson

from contam.providers.lean import LeanClient
from contam.providers.base import (
    Fatal,
    ModelSettings,
    Provider,
    ProviderError,
    QuotaExhausted,
    RateLimited,
    Reply,
    Request,
    Timeout,
    Transient,
    redact,
    resolve_api_key,
)
from contam.providers.reach import CONNECT_CHECK_S, check_reachable

__all__ = [
    "HTTPProvider",
    "send",
    "http_failures",
    "decode_json",
    "reply_shape",
    "answer_text",
    "error_for_status",
    "refuse_unsafe_params",
    "QUOTA_ADVICE",
]

T = TypeVar("T")

QUOTA_ADVICE = ("the day's quota (or the account's usage limit) is used up: this model is "
                "stopped, and running `contam run` again later resumes it without asking "
                "answered items again")

# Substrings of parameter names that switch on tools, function calling, search or grounding (R2),
# compared after lower-casing and dropping '_' and '-' so snake_case and camelCase both match.
_TOOL_WORDS = ("tool", "function", "grounding", "retrieval", "search", "plugin", "mcp",
               "codeexecution", "urlcontext")
_MESSAGE_LIMIT = 500


def _squash(key: str) -> str:
    return key.lower().replace("_", "").replace("-", "")


def _all_keys(value: Any) -> Iterator[str]:
    """Every mapping key in a nested params structure, so a tool switch cannot hide one level down."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            yield str(key)
            yield from _all_keys(inner)
    elif isinstance(value, list | tuple):
        for inner in value:
            yield from _all_keys(inner)


def refuse_unsafe_params(spec: ModelSettings, reserved: Iterable[str]) -> None:
    """Fatal if ``params`` could enable tools/retrieval (R2) or overwrite the request itself (R1)."""
    for key in _all_keys(spec.params):
        if any(word in _squash(key) for word in _TOOL_WORDS):
            raise Fatal(f"model {spec.name!r}: params key {key!r} would let the model use tools, "
                        "search or retrieval (rule R2); remove it from the config")
    reserved_squashed = {_squash(name) for name in reserved}
    for key in spec.params:
        if _squash(key) in reserved_squashed:
            raise Fatal(f"model {spec.name!r}: params key {key!r} is part of the request the "
                        "harness builds itself (rule R1: one stateless question); remove it")


async def send(client: httpx.AsyncClient, method: str, url: str, *, label: str, timeout: float,
               headers: Mapping[str, str], payload: Any = None) -> httpx.Response:
    """One HTTP exchange; every transport failure leaves here as a classified ProviderError."""
    content = orjson.dumps(payload) if payload is not None else None
    if content is not None:
        headers = {**headers, "content-type": "application/json"}
    with http_failures(label, url, timeout):
        if isinstance(client, LeanClient):  # the engine's client: its lean path
            return await client.exchange(method, url, headers=headers, content=content,
                                         timeout=timeout)
        return await client.request(method, url, content=content, headers=headers, timeout=timeout)


@contextlib.contextmanager
def http_failures(label: str, url: str, timeout: float) -> Iterator[None]:
    """httpx's exceptions inside the block leave it as classified ProviderErrors (the batch
    protocols' uploads and downloads use it around their own httpx calls)."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise Timeout(f"{label}: no reply within {timeout:g} s ({type(exc).__name__})") from exc
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        raise Fatal(f"{label}: cannot send to {url!r}: {exc}") from exc
    except httpx.TransportError as exc:  # connect/read/write errors, resets, protocol breakage
        raise Transient(f"{label}: connection failed ({type(exc).__name__}: {exc})") from exc
    except UnicodeEncodeError:  # a header httpx cannot encode; its message would quote the value
        raise Fatal(f"{label}: a request header holds a non-ASCII character") from None


def decode_json(response: httpx.Response, label: str) -> Any:
    """The body as JSON; a body that is not JSON is a server hiccup worth another try."""
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError as exc:
        raise Transient(f"{label}: HTTP {response.status_code} with a body that is not JSON "
                        f"({len(response.content)} bytes)", http_status=response.status_code) from exc


@contextlib.contextmanager
def reply_shape(label: str, status: int) -> Iterator[None]:
    """Turn a well-formed JSON reply of the wrong shape (missing keys, wrong types) into Transient."""
    try:
        yield
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        raise Transient(f"{label}: HTTP {status} reply has an unexpected shape "
                        f"({type(exc).__name__}: {exc})", http_status=status) from exc


def answer_text(value: Any, field: str) -> str:
    """A reply's answer text as the API sent it: a string (``""`` is a blank answer, which is
    data); null or anything else is a malformed reply (``reply_shape`` makes it Transient: asked
    again), never the text ``"None"``."""
    if not isinstance(value, str):
        shown = "null" if value is None else f"a {type(value).__name__}"
        raise ValueError(f"{field} is {shown}, not text")
    return value


def error_for_status(status: int, detail: str, *, label: str, retry_after_s: float | None = None,
                     quota: bool = False) -> ProviderError:
    """The retry decision for a non-2xx reply, shared by every provider."""
    # Scrubbed before it is cut: a cut key would no longer match its registered spellings.
    text = f"{label}: HTTP {status}: {redact(detail)[:_MESSAGE_LIMIT] or 'no error message'}"
    if quota:
        return QuotaExhausted(f"{text} ({QUOTA_ADVICE})", http_status=status)
    if status == 429:
        return RateLimited(text, http_status=status, retry_after_s=retry_after_s)
    if status in (408, 409) or status >= 500:  # 529 = Anthropic overloaded
        return Transient(text, http_status=status, retry_after_s=retry_after_s)
    return Fatal(text, http_status=status)


class HTTPProvider(Provider):
    """The shape every wire protocol shares; subclasses fill in their dialect.

    Subclasses set ``default_base_url`` and implement ``endpoint``, ``headers``, ``payload``,
    ``reply_from`` and ``error_from``. ``payload`` sees only the :class:`Request` (R1).
    """

    default_base_url: ClassVar[str]
    key_env: ClassVar[str | None] = None  # the conventional variable; api_key_env overrides it
    key_required: ClassVar[bool] = True
    reserved_params: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, spec: ModelSettings, client: httpx.AsyncClient) -> None:
        refuse_unsafe_params(spec, self.reserved_params)
        self.spec = spec
        self.client = client
        self.base_url = (spec.base_url or self.default_base_url).rstrip("/")
        self.label = f"{spec.provider} model {spec.name!r}"
        self._api_key = self.resolve_key(spec)

    @classmethod
    def resolve_key(cls, spec: ModelSettings) -> str | None:
        """The key from the environment; MissingKey where the protocol needs one and none is set."""
        return resolve_api_key(spec, cls.key_env, required=cls.key_required)

    async def preflight(self) -> str | None:
        """A quick connection check of the server (:func:`contam.providers.reach.check_reachable`): one
        that is down would take every request's timeout and retries to say so; nothing is sent."""
        await check_reachable(self.base_url, label=self.label,
                              timeout=min(self.spec.timeout_s, CONNECT_CHECK_S))
        return None

    async def generate(self, request: Request) -> Reply:
        self.check_samples(request)
        return await self.post_json(self.endpoint(), self.payload(request), self.reply_from)

    async def post_json(self, url: str, payload: Any, read: Callable[[Any], T]) -> T:
        """One POST of ``payload`` to ``url`` and ``read`` of its JSON body: a non-2xx reply is
        :meth:`error_from`'s error; a body that is not JSON, or of a shape ``read`` cannot take,
        is Transient."""
        response = await send(self.client, "POST", url, label=self.label,
                              timeout=self.spec.timeout_s, headers=self.headers(), payload=payload)
        if not response.is_success:
            raise self.error_from(response)
        body = decode_json(response, self.label)
        with reply_shape(self.label, response.status_code):
            return read(body)

    def error_body(self, response: httpx.Response) -> Any:
        """An error reply's JSON body, or its text when it has none (proxies send HTML)."""
        try:
            return orjson.loads(response.content)
        except orjson.JSONDecodeError:
            return redact(response.text)[:_MESSAGE_LIMIT]  # scrubbed before it is cut

    @staticmethod
    def nested_error(body: Any) -> dict[str, Any]:
        """The ``{"error": {...}}`` object of an error body (OpenAI's and Anthropic's shape), or
        ``{}`` when the body has none (an HTML page from a proxy, a bare string)."""
        error = body.get("error") if isinstance(body, dict) else None
        return error if isinstance(error, dict) else {}

    # The dialect: each provider module implements these.
    def endpoint(self) -> str:
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def payload(self, request: Request) -> dict[str, Any]:
        raise NotImplementedError

    def reply_from(self, body: Any) -> Reply:
        raise NotImplementedError

    def error_from(self, response: httpx.Response) -> ProviderError:
        raise NotImplementedError
