"""Batch jobs: what the three batch protocols (OpenAI, Anthropic, Gemini) share.

A :class:`BatchProtocol` wraps the model's synchronous provider and reuses its dialect: a line's
request body is ``orjson.dumps(provider.payload(request))``, the very bytes the synchronous path
sends (:func:`request_body`); a result line's body is read by ``provider.reply_from`` and a failed
line classified by ``provider.error_from``, so both paths keep the same rules and the same error
classes. Each protocol module adds its own URLs and envelopes: submit, poll, results, cancel and
list. Like providers, protocols never retry or sleep; the harness's batch lane does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx
import orjson

from contam.harness.provider_names import BATCH_PROVIDERS, class_prefix
from contam.providers.base import ProviderError, Reply, Request, Transient
from contam.providers.transport import HTTPProvider, decode_json, http_failures, reply_shape, send

__all__ = ["BatchLine", "JobState", "LineResult", "JobLimits", "BatchProtocol", "request_body",
           "split_lines", "BATCH_PROTOCOLS", "create_batch_protocol", "line_error", "jsonl",
           "ExpiredLine", "CancelledLine"]


def request_body(provider: HTTPProvider, request: Request) -> bytes:
    """The body the synchronous path sends for ``request`` (:func:`contam.providers.transport.send`)."""
    provider.check_samples(request)
    return orjson.dumps(provider.payload(request))


@dataclass(frozen=True, slots=True)
class BatchLine:
    """One request of a job: its custom id (which names the cell) and its body bytes."""

    custom_id: str
    body: bytes

    def size(self, overhead: int) -> int:
        """The bytes it adds to a job: its body, its id and ``overhead`` for its envelope."""
        return len(self.body) + len(self.custom_id) + overhead


@dataclass(frozen=True, kw_only=True)
class JobState:
    """A job as the provider reports it. ``status`` is the provider's own word."""

    job_id: str
    status: str
    ended: bool  # no further change: results (if any) can be read
    total: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    tag: str | None = None  # the tag contam gave it (metadata / display name), as echoed
    error: str | None = None  # why the whole job failed, when it did
    raw: Mapping[str, Any] | None = None  # the provider's object, for results()


@dataclass(frozen=True, slots=True)
class LineResult:
    """One line's outcome: a reply, or the classified error (expired and cancelled lines are
    :class:`~contam.providers.base.Transient`: asking again can help)."""

    custom_id: str
    reply: Reply | None = None
    error: ProviderError | None = None


@dataclass(frozen=True, slots=True)
class JobLimits:
    max_requests: int
    max_bytes: int


def split_lines(lines: Iterable[BatchLine], limits: JobLimits, overhead: int) -> Iterator[list[BatchLine]]:
    """Consecutive groups of lines, each within the requests and bytes a job may hold
    (``overhead``: the bytes each line's envelope adds to its body)."""
    group: list[BatchLine] = []
    size = 0
    for line in lines:
        line_size = line.size(overhead)
        if group and (len(group) >= limits.max_requests or size + line_size > limits.max_bytes):
            yield group
            group, size = [], 0
        group.append(line)
        size += line_size
    if group:
        yield group


class ExpiredLine(Transient):
    outcome = "expired"


class CancelledLine(Transient):
    outcome = "cancelled"


class BatchProtocol:
    """One provider's batch API, built around its synchronous provider (headers, base URL,
    payload, reply parsing, error classification)."""

    limits: ClassVar[JobLimits]
    line_overhead: ClassVar[int] = 200  # bytes of envelope per line, generously
    # The job carries contam's tag, so a job whose id never reached the store is found by it.
    # Without one (Anthropic's), the lane matches an untagged job by its results' keys.
    tags_jobs: ClassVar[bool] = True

    def __init__(self, provider: HTTPProvider, client: httpx.AsyncClient) -> None:
        self.provider = provider
        self.client = client
        self.label = provider.label
        self.timeout = max(provider.spec.timeout_s, 60.0)  # uploads and downloads are large

    def line(self, custom_id: str, request: Request) -> BatchLine:
        return BatchLine(custom_id, request_body(self.provider, request))

    # The protocol: each module implements these.
    async def submit(self, lines: list[BatchLine], tag: str) -> JobState:
        raise NotImplementedError

    async def poll(self, job_id: str) -> JobState:
        raise NotImplementedError

    async def results(self, job: JobState) -> list[LineResult]:
        raise NotImplementedError

    async def cancel(self, job_id: str) -> JobState:
        raise NotImplementedError

    async def list_jobs(self) -> list[JobState]:
        raise NotImplementedError

    def _state(self, raw: Any) -> JobState:
        """The provider's job object, read into a JobState."""
        raise NotImplementedError

    # Shared plumbing.
    async def list_pages(self, url: str, cursor: str) -> list[JobState]:
        """Every job of a listing paged by the last id seen (OpenAI's `after`, Anthropic's `after_id`)."""
        jobs, after = [], None
        while True:
            page = await self.call("GET", f"{url}?limit=100" + (f"&{cursor}={after}" if after else ""))
            states = [self._state(item) for item in page.get("data") or []]
            jobs += states
            after = page.get("last_id") or (states[-1].job_id if states else None)
            if not page.get("has_more") or not after:
                return jobs

    async def call(self, method: str, url: str, payload: Any = None) -> Any:
        """A JSON exchange; a non-2xx reply raises the provider's own classification."""
        response = await send(self.client, method, url, label=self.label, timeout=self.timeout,
                              headers=self.provider.headers(), payload=payload)
        return self.decoded(response)

    async def download(self, url: str, headers: Mapping[str, str] | None = None) -> bytes:
        with http_failures(self.label, url, self.timeout):
            response = await self.client.get(url, headers={**self.provider.headers(), **(headers or {})},
                                              timeout=self.timeout)
        if not response.is_success:
            raise self.provider.error_from(response)
        return response.content

    def decoded(self, response: httpx.Response) -> Any:
        if not response.is_success:
            raise self.provider.error_from(response)
        return decode_json(response, self.label)

    def reply(self, custom_id: str, body: Any) -> LineResult:
        """A successful line's body, read exactly as a synchronous reply is."""
        try:
            with reply_shape(self.label, 200):
                return LineResult(custom_id, reply=self.provider.reply_from(body))
        except ProviderError as exc:
            return LineResult(custom_id, error=exc)

    def failure(self, custom_id: str, status: int, body: Any) -> LineResult:
        return LineResult(custom_id, error=line_error(self.provider, status, body))


def line_error(provider: HTTPProvider, status: int, body: Any) -> ProviderError:
    """A failed line classified as the synchronous path classifies that status and body."""
    return provider.error_from(httpx.Response(status, content=orjson.dumps(body)))


def jsonl(content: bytes) -> Iterator[Any]:
    for raw in content.splitlines():
        if raw.strip():
            yield orjson.loads(raw)


# provider -> (module, class), from the one list: providers/<name>_batch.py holds <Name>Batch.
BATCH_PROTOCOLS: dict[str, tuple[str, str]] = {
    name: (f"contam.providers.{name}_batch", f"{class_prefix(name)}Batch") for name in BATCH_PROVIDERS}


def create_batch_protocol(provider: HTTPProvider, client: httpx.AsyncClient) -> BatchProtocol:
    import importlib

    module_name, class_name = BATCH_PROTOCOLS[provider.spec.provider]
    return getattr(importlib.import_module(module_name), class_name)(provider, client)
