"""A loopback server speaking all four provider APIs, for tests, benchmarks and dry runs.

One asyncio server (HTTP/1.1 keep-alive parsed by h11, so hundreds of concurrent connections cost
little) answers OpenAI ``/v1/chat/completions`` (and ``/v1/models``), Gemini
``/v1beta/models/{model}:generateContent``, Anthropic ``/v1/messages`` and Ollama ``/api/generate``
(and ``/api/version``, ``/api/tags``, ``/api/show``) with each API's real reply and error shapes
(:mod:`contam.harness.emulator.apis`), the batch APIs of OpenAI, Anthropic and Gemini
(:mod:`contam.harness.emulator.batch`: a job time, failed and expired lines), and vLLM's ``/v1/completions``
with prompt log-probabilities (:mod:`contam.harness.emulator.logprobs`). :class:`EmulatorSettings` adds
what real servers do to clients: latency, an enforced requests-per-minute limit per (API, model)
with each API's 429 hint, random faults, a per-day quota, a served-model substitution, key checks,
and a ``script`` of exact outcomes for tests. Without a ``responder`` it answers questions
with a reproducible stand-in and judge requests (told by their user text) with a bare
label (:func:`default_reply`); with ``knowledge`` (``contam emulator --items``) it answers like a
model that knows those items (:mod:`contam.harness.emulator.knowledge`).

In-process use: ``with run_emulator(EmulatorSettings(...)) as emu:`` serves from a background
thread with its own event loop; ``emu.url`` is the address, ``emu.base_url("openai")`` a provider's
``base_url``, and ``emu.requests`` every request received. Command line: ``contam emulator``
(:mod:`contam.harness.emulator.command`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import random
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any

from contam.harness.emulator.answers import Answerer
from contam.harness.emulator.apis import BadCall, Call, Canned, Dialect, Hint, json_reply
from contam.harness.emulator.dialects import DIALECTS
from contam.harness.emulator.batch import BatchServer
from contam.harness.emulator.http import HTTPServer, Unparseable
from contam.harness.emulator.logprobs import CompletionsDialect
from contam.harness.emulator.settings import (
    HANG, RESET, EmulatorSettings, RecordedRequest, Step, default_answer, default_reply,
    judge_label, parse_faults, parse_step,
)
from contam.providers.traits import route_of, traits_of

__all__ = [
    "EmulatorSettings",
    "Emulator",
    "RecordedRequest",
    "Step",
    "run_emulator",
    "serve",
    "parse_step",
    "parse_faults",
    "default_answer",
    "default_reply",
    "judge_label",
]

OLLAMA_VERSION = "0.13.0"
_MALFORMED_BODY = b'{"id": "emu-broken", "choices": [{"message": {"content": "cut off mid-'


# ----------------------------------------------------------------------------- the application

def _route(method: str, path: str) -> tuple[str, str | None, str | None] | None:
    """(endpoint, api, model in the path) for a known endpoint, else None: each provider's
    routes as providers/traits.py declares them, and the listings every client may ask for."""
    if method == "GET" and path in ("/api/version", "/api/tags", "/v1/models"):
        return path.rsplit("/", 1)[-1], None, None
    return route_of(method, path)


def _seconds_header(seconds: float) -> str:
    return f"{seconds:.3f}".rstrip("0").rstrip(".")


def _http_date_in(seconds: float) -> str:
    """An HTTP date at least ``seconds`` from now (the format has whole seconds only)."""
    when = datetime.now(timezone.utc) + timedelta(seconds=seconds)
    return format_datetime(when.replace(microsecond=0) + timedelta(seconds=1), usegmt=True)


def _is_cloud(model: str) -> bool:
    return model.endswith("-cloud") or model.endswith(":cloud")


class _App:
    """Decides the answer to each request. Runs on the server's event loop only."""

    def __init__(self, settings: EmulatorSettings) -> None:
        self.settings = settings
        self.script: deque[Step] = deque(parse_step(s) for s in settings.script)
        self.requests: list[RecordedRequest] = []
        self._faults = [(parse_step(name), rate) for name, rate in settings.faults.items()]
        self.rng = random.Random(settings.seed)
        self._windows: defaultdict[tuple[str, str], deque[float]] = defaultdict(deque)
        self._day_counts: Counter[tuple[str, str]] = Counter()
        self._seen_models: dict[str, set[str]] = defaultdict(set)
        self.answerer = Answerer(settings)
        # A replica of a served model works on `slots` requests at a time: the others wait their
        # turn, so its throughput is slots / latency whatever the clients send.
        self._slots = asyncio.Semaphore(settings.slots) if settings.slots else None
        self.batches = BatchServer(self)
        self.completions = CompletionsDialect(settings.knowledge, settings.seed)

    async def respond(self, incoming: RecordedRequest) -> Canned | str:
        route = _route(incoming.method, incoming.path)
        body = incoming.body
        if self.settings.record:
            self.requests.append(incoming)
        batch_answer = self.batches.respond(incoming)
        if batch_answer is not None:
            return batch_answer
        if route is None:
            return Canned(404, b"404 page not found", content_type="text/plain; charset=utf-8")
        endpoint, api, path_model = route
        if endpoint == "generate":
            return await self._generate(DIALECTS[api or ""], path_model, incoming, body)
        if endpoint == "completions":
            return await self._generate(self.completions, path_model, incoming, body)
        return self._side_endpoint(endpoint, body)

    async def _generate(self, dialect: Dialect, path_model: str | None, incoming: RecordedRequest,
                        body: Any) -> Canned | str:
        if body is Unparseable:
            return dialect.error(400, "The request body is not valid JSON.")
        try:
            call = dialect.call_from(path_model, incoming.headers, incoming.query, body)
        except BadCall as exc:
            return dialect.error(400, str(exc))
        self._seen_models[call.api].add(call.model)
        if self.settings.api_keys is not None and call.key not in self.settings.api_keys:
            return dialect.unauthorized(call.key)
        if self.settings.known_models is not None and call.model not in self.settings.known_models:
            return dialect.model_missing(call.model)
        return await self._play(dialect, call, self._next_step(call))

    def _next_step(self, call: Call) -> Step | None:
        """The scripted outcome if one is left, else quota, rate limit or a random fault."""
        with contextlib.suppress(IndexError):
            return self.script.popleft()
        key = (call.api, call.model)
        quota = self.settings.quota_per_day
        if quota is not None and self._day_counts[key] >= quota:
            return Step("quota")
        wait = self._rpm_wait(key)
        if wait is not None:
            return Step("rate_rpm", 429, wait)
        self._day_counts[key] += 1
        return self._draw_fault()

    def _rpm_wait(self, key: tuple[str, str]) -> float | None:
        """None when the request fits in the last 60 s window, else the wait until it would."""
        if not self.settings.rpm:
            return None
        now = time.monotonic()
        window = self._windows[key]
        while window and window[0] <= now - 60.0:
            window.popleft()
        if len(window) < self.settings.rpm:
            window.append(now)
            return None
        return window[0] + 60.0 - now

    def _draw_fault(self) -> Step | None:
        if not self._faults:
            return None
        draw, total = self.rng.random(), 0.0
        for step, rate in self._faults:
            total += rate
            if draw < total:
                return step
        return None

    async def _play(self, dialect: Dialect, call: Call, step: Step | None) -> Canned | str:
        kind = step.kind if step else "ok"
        if kind in ("rate", "rate_rpm", "rate_date"):
            return dialect.rate_limited(call, self._hint(step))
        if kind == "quota":
            return dialect.quota_exhausted(call, self.settings.quota_per_day)
        if kind in (RESET, HANG):
            return kind
        await self._delay()
        if kind == "status":
            return dialect.error(step.status)
        if kind == "malformed":
            return Canned(200, _MALFORMED_BODY)
        return self.success(dialect, call)

    def _hint(self, step: Step) -> Hint:
        """How a 429 spells its wait: exactly as scripted, rounded up to whole seconds (the RPM
        limiter: waiting that long is always enough), or as an HTTP date."""
        seconds, rpm = step.seconds, self.settings.rpm
        if step.kind == "rate_date":
            return Hint(seconds, _http_date_in(seconds), header_only=True, limit=rpm)
        header = str(math.ceil(seconds)) if step.kind == "rate_rpm" else _seconds_header(seconds)
        return Hint(seconds, header, limit=rpm)

    async def _delay(self) -> None:
        settings = self.settings
        jitter = self.rng.uniform(-settings.jitter_ms, settings.jitter_ms) if settings.jitter_ms else 0.0
        seconds = max(0.0, settings.latency_ms + jitter) / 1000
        if self._slots is not None:
            async with self._slots:
                await asyncio.sleep(seconds)
        elif seconds:
            await asyncio.sleep(seconds)

    def success(self, dialect: Dialect, call: Call) -> Canned:
        try:
            answers = self.answerer.answers(call) if dialect.wants_answers else []
        except Exception as exc:  # a test's responder failing is the server's 500, as for real
            return dialect.error(500, f"responder failed: {type(exc).__name__}")
        return dialect.ok(call, served=self.settings.served_model or call.model, answers=answers,
                          input_tokens=len(f"{call.system} {call.question}".split()),
                          output_tokens=sum(len(answer.text.split()) for answer in answers))

    # The small endpoints clients use to look around: Ollama's version/tags/show, OpenAI's models.
    def _side_endpoint(self, endpoint: str, body: Any) -> Canned:
        if endpoint == "version":
            return json_reply(200, {"version": OLLAMA_VERSION})
        if endpoint == "tags":
            return json_reply(200, {"models": [self._ollama_model(m) for m in self._models("ollama")]})
        if endpoint == "models":
            return json_reply(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": "emulator"}
                for m in self._models("openai")]})
        return self._show(body)

    def _models(self, api: str) -> list[str]:
        return sorted(self.settings.known_models or self._seen_models[api])

    def _show(self, body: Any) -> Canned:
        model = str((body or {}).get("model") or (body or {}).get("name") or "") if isinstance(body, dict) else ""
        known = self.settings.known_models
        if not model or (known is not None and model not in known):
            return json_reply(404, {"error": f"model '{model}' not found"})
        info = self._ollama_model(model)
        return json_reply(200, {"modelfile": f"FROM {model}\n", "parameters": "",
                                "template": "{{ .Prompt }}", "details": info["details"],
                                "model_info": {}, "capabilities": ["completion"],
                                "modified_at": info["modified_at"],
                                **{k: info[k] for k in ("remote_model", "remote_host", "emulated")
                                   if k in info}})

    @staticmethod
    def _ollama_model(model: str) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "name": model, "model": model, "modified_at": "2026-01-01T00:00:00Z",
            "size": 0 if _is_cloud(model) else 1_000_000,
            "digest": hashlib.sha256(model.encode()).hexdigest(),
            "details": {"parent_model": "", "format": "gguf", "family": "emulated",
                        "families": ["emulated"], "parameter_size": "1B",
                        "quantization_level": "Q4_0"}}
        if _is_cloud(model):
            entry["remote_model"] = model.removesuffix("-cloud").removesuffix(":cloud")
            entry["remote_host"] = "https://ollama.com:443"  # what Ollama says; the emulator
            entry["emulated"] = True  # answers itself, and says so (the preflight line)
        return entry


# --------------------------------------------------------------------------- running it

class Emulator:
    """A running emulator: its address, its settings and every request it has received."""

    def __init__(self, settings: EmulatorSettings, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.settings = settings
        self.host = host
        self.port = port
        self._app = _App(settings)
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        return self._app.requests

    @property
    def batch_line_counts(self) -> Counter[tuple[str, str, str]]:
        """Batch lines received per (API, model, question): once per paid request."""
        return self._app.batches.line_counts

    @property
    def batch_jobs(self) -> list[tuple[str, str, str | None]]:
        """Every batch job created: (API, job id, tag)."""
        return [(job.api, job.job_id, job.tag) for job in self._app.batches.jobs.values()]

    def base_url(self, provider: str) -> str:
        """The ``base_url`` a [[models]] entry of that provider needs to talk to this emulator."""
        return f"{self.url}{traits_of(provider).base_path}"

    def push_script(self, *steps: str) -> None:
        """Queue exact outcomes for the next requests (thread-safe)."""
        self._app.script.extend(parse_step(step) for step in steps)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._thread_main, name="contam-emulator", daemon=True)
        self._thread.start()
        self._ready.wait(timeout=30)
        if self._error is not None:
            raise self._error
        if not self._ready.is_set():
            raise RuntimeError("the emulator did not start within 30 s")

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # loop already gone
                self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _thread_main(self) -> None:
        try:
            asyncio.run(self._serve_until_stopped())
        except BaseException as exc:  # surfaced to start(); a thread cannot raise to its caller
            self._error = exc
            self._ready.set()

    async def _serve_until_stopped(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = HTTPServer(self._app)
        self.port = await server.start(self.host, self.port)
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await server.close()


@contextlib.contextmanager
def run_emulator(settings: EmulatorSettings | None = None, *, host: str = "127.0.0.1",
                 port: int = 0) -> Iterator[Emulator]:
    """Serve the emulator from a background thread for the duration of the ``with`` block."""
    emulator = Emulator(settings or EmulatorSettings(), host=host, port=port)
    emulator.start()
    try:
        yield emulator
    finally:
        emulator.stop()


async def serve(settings: EmulatorSettings, *, host: str = "127.0.0.1", port: int = 0,
                on_ready: Callable[[str], None] | None = None,
                stop: asyncio.Event | None = None) -> None:
    """Serve on the current event loop until ``stop`` is set (or the task is cancelled)."""
    server = HTTPServer(_App(settings))
    bound = await server.start(host, port)
    if on_ready is not None:
        on_ready(f"http://{host}:{bound}")
    try:
        await (stop or asyncio.Event()).wait()
    finally:
        await server.close()
