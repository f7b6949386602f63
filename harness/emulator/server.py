"""A loopback server speaking all four provider APIs, for tests, benchmarks and dry runs.

One asyncio server (HTTP/1.1 keep-alive parsed by h11, so hundreds of concurrent connections cost
little) answers OpenAI ``/v1/chat/completions`` (and ``/v1/models``), Gemini
``/v1beta/models/{model}:generateContent``, Anthropic ``/v1/messages`` and Ollama ``/api/generate``
(and ``/api/version``, ``/api/tags``, ``/api/show``) with each API's real reply and error shapes
(:mod:`harness.emulator.apis`). :class:`EmulatorSettings` adds what real servers do to clients:
latency, an enforced requests-per-minute limit per (API, model) with each API's 429 hint, random
faults, a per-day quota, a served-model substitution, key checks, and a ``script`` of exact
outcomes for tests. Without a ``responder`` it answers questions with a reproducible stand-in and
judge requests (the judge rubric as system prompt) with a bare label (:func:`default_reply`).

In-process use: ``with run_emulator(EmulatorSettings(...)) as emu:`` serves from a background
thread with its own event loop; ``emu.url`` is the address, ``emu.base_url("openai")`` a provider's
``base_url``, and ``emu.requests`` every request received. Command line: ``contam emulator``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import http
import math
import random
import re
import signal
import socket
import struct
import threading
import time
import unicodedata
import zlib
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import h11
import orjson

from harness.emulator.apis import DIALECTS, BadCall, Call, Canned, Dialect, Hint, json_reply
from harness.errors import UserError
from metrics.judge import JUDGE_RUBRIC

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
    "emulator_command",
]

OLLAMA_VERSION = "0.13.0"
_MALFORMED_BODY = b'{"id": "emu-broken", "choices": [{"message": {"content": "cut off mid-'
_RESET, _HANG = "reset", "hang"  # outcomes that are not an HTTP answer
_STEP_WORDS = {"ok", "quota", "reset", "malformed", "hang"}


# ------------------------------------------------------------------------------ settings, steps

@dataclass(frozen=True, slots=True)
class Step:
    """One scripted or drawn outcome: ok, an HTTP error status, a 429 with a hint, and so on."""

    kind: str  # ok | status | rate | rate_date | quota | reset | malformed | hang
    status: int | None = None
    seconds: float | None = None


def parse_step(text: str) -> Step:
    """``ok``, ``500``, ``529``, ``429`` / ``429:1.5`` (hint in seconds), ``429date:3`` (the hint as
    an HTTP date), ``quota``, ``reset``, ``malformed`` or ``hang``."""
    word, _, arg = text.strip().lower().partition(":")
    if word in _STEP_WORDS and not arg:
        return Step(word)
    if word in ("429", "429date"):
        seconds = _non_negative_float(arg, text) if arg else 1.0
        return Step("rate_date" if word == "429date" else "rate", 429, seconds)
    if word.isdigit() and 400 <= int(word) <= 599 and not arg:
        return Step("status", int(word))
    raise ValueError(f"unknown emulator outcome {text!r}: expected ok, an HTTP status 400-599, "
                     "429:SECONDS, 429date:SECONDS, quota, reset, malformed or hang")


def _non_negative_float(value: str, context: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{context!r}: {value!r} is not a number") from None
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{context!r}: {value!r} must be a non-negative number")
    return number


def parse_faults(spec: str) -> dict[str, float]:
    """``500=0.05,529=0.02,reset=0.01,malformed=0.01,hang=0.01`` -> {outcome: probability}."""
    faults: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, rate = item.partition("=")
        if not sep:
            raise ValueError(f"fault {item!r}: expected OUTCOME=PROBABILITY, e.g. 500=0.05")
        parse_step(name)
        faults[name.strip()] = _non_negative_float(rate, item)
    _check_faults(faults)
    return faults


def _check_faults(faults: Mapping[str, float]) -> None:
    for name, rate in faults.items():
        parse_step(name)
        if not 0 <= rate <= 1:
            raise ValueError(f"fault {name!r}: probability {rate} is not between 0 and 1")
    if sum(faults.values()) > 1 + 1e-9:
        raise ValueError(f"fault probabilities add up to {sum(faults.values()):g}, more than 1")


def default_answer(question: str) -> str:
    """A short answer that depends only on the question, so reruns are reproducible."""
    return f"Emulated answer {zlib.crc32(question.encode('utf-8')):08x}."


# The judge request's user text (metrics.judge.judge_request); the reference comes first.
_JUDGE_USER = re.compile(r"\AReference answer: (?P<reference>.*?)\nAnswer to grade: (?P<answer>.*)\Z",
                         re.DOTALL)
# Words too common to count as "sharing part of the reference" on their own.
_FUNCTION_WORDS = frozenset(
    "a an the of in on at to for from by with and or is was are were it its his her their".split())


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold()))


def judge_label(reference: str, answer: str) -> str:
    """A deterministic stand-in for an LLM judge, in the rubric's reply vocabulary: ``right``
    when the answer holds every word of the reference, ``partially right`` when it holds some of
    its content words, else ``wrong``."""
    wanted, given = _words(reference), _words(answer)
    if wanted and wanted <= given:
        return "right"
    if (wanted - _FUNCTION_WORDS) & given:
        return "partially right"
    return "wrong"


def default_reply(system: str, user: str) -> str:
    """What the emulator answers without a ``responder``: a bare label to a judge request (its
    system prompt is the judge rubric), so ``contam judge`` works against ``contam emulator``;
    :func:`default_answer` to anything else, including a judge request it cannot parse."""
    graded = _JUDGE_USER.match(user) if system.strip() == JUDGE_RUBRIC.strip() else None
    if graded is None:
        return default_answer(user)
    return judge_label(graded["reference"], graded["answer"])


@dataclass(frozen=True, kw_only=True)
class EmulatorSettings:
    """How the emulator behaves. Every field is optional; the default is a fast, faultless server."""

    latency_ms: float = 0.0  # added before every answer except 429s and auth failures
    jitter_ms: float = 0.0  # latency varies uniformly by +/- this much
    rpm: float | None = None  # enforced per (API, model) over a sliding 60 s window
    faults: Mapping[str, float] = field(default_factory=dict)  # outcome -> probability
    script: Sequence[str] = ()  # exact outcomes for the first requests, consumed in order
    served_model: str | None = None  # answer as this model whatever was asked for
    quota_per_day: int | None = None  # requests per (API, model) before the day's quota is gone
    api_keys: frozenset[str] | None = None  # when set, other keys get each API's auth error
    responder: Callable[[str], str] | None = None  # question text -> answer; default_reply if None
    known_models: frozenset[str] | None = None  # when set, other models are 404 (Ollama: not pulled)
    hang_s: float = 600.0  # how long a "hang" holds the connection open without answering
    seed: int | None = None  # for the fault draws and the jitter
    record: bool = True  # keep every request in Emulator.requests

    def __post_init__(self) -> None:
        for step in self.script:
            parse_step(step)
        _check_faults(self.faults)
        if self.latency_ms < 0 or self.jitter_ms < 0 or (self.rpm is not None and self.rpm <= 0):
            raise ValueError("latency and jitter must be >= 0 and rpm > 0")
        if self.quota_per_day is not None and self.quota_per_day < 0:
            raise ValueError("quota_per_day must be >= 0")


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as received: lower-cased header names, the JSON body parsed (None if none)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    raw_body: bytes
    client: tuple[str, int] | None = None  # the peer address: one per keep-alive connection


# ----------------------------------------------------------------------------- the application

def _route(method: str, path: str) -> tuple[str, str | None, str | None] | None:
    """(endpoint, api, model in the path) for a known endpoint, else None."""
    if method == "POST":
        if path == "/v1/chat/completions":
            return "generate", "openai", None
        if path == "/v1/messages":
            return "generate", "anthropic", None
        if path == "/api/generate":
            return "generate", "ollama", None
        if path == "/api/show":
            return "show", "ollama", None
        for prefix in ("/v1beta/models/", "/v1/models/"):
            if path.startswith(prefix) and path.endswith(":generateContent"):
                return "generate", "gemini", path[len(prefix):-len(":generateContent")]
    if method == "GET" and path in ("/api/version", "/api/tags", "/v1/models"):
        return path.rsplit("/", 1)[-1], None, None
    return None


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
        self._rng = random.Random(settings.seed)
        self._windows: defaultdict[tuple[str, str], deque[float]] = defaultdict(deque)
        self._day_counts: Counter[tuple[str, str]] = Counter()
        self._seen_models: dict[str, set[str]] = defaultdict(set)

    async def respond(self, incoming: RecordedRequest) -> Canned | str:
        route = _route(incoming.method, incoming.path)
        body = incoming.body
        if self.settings.record:
            self.requests.append(incoming)
        if route is None:
            return Canned(404, b"404 page not found", content_type="text/plain; charset=utf-8")
        endpoint, api, path_model = route
        if endpoint == "generate":
            return await self._generate(DIALECTS[api or ""], path_model, incoming, body)
        return self._side_endpoint(endpoint, body)

    async def _generate(self, dialect: Dialect, path_model: str | None, incoming: RecordedRequest,
                        body: Any) -> Canned | str:
        if body is _Unparseable:
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
        draw, total = self._rng.random(), 0.0
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
        if kind in (_RESET, _HANG):
            return kind
        await self._delay()
        if kind == "status":
            return dialect.error(step.status)
        if kind == "malformed":
            return Canned(200, _MALFORMED_BODY)
        return self._success(dialect, call)

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
        jitter = self._rng.uniform(-settings.jitter_ms, settings.jitter_ms) if settings.jitter_ms else 0.0
        seconds = max(0.0, settings.latency_ms + jitter) / 1000
        if seconds:
            await asyncio.sleep(seconds)

    def _success(self, dialect: Dialect, call: Call) -> Canned:
        try:
            answer = (self.settings.responder(call.question) if self.settings.responder
                      else default_reply(call.system, call.question))
        except Exception as exc:  # a test's responder failing is the server's 500, as for real
            return dialect.error(500, f"responder failed: {type(exc).__name__}")
        words = answer.split()
        truncated = bool(call.max_tokens) and len(words) > call.max_tokens
        if truncated:
            answer = " ".join(words[:call.max_tokens])
        return dialect.ok(call, served=self.settings.served_model or call.model, answer=answer,
                          truncated=truncated,
                          input_tokens=len(f"{call.system} {call.question}".split()),
                          output_tokens=len(answer.split()))

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
                                **{k: info[k] for k in ("remote_model", "remote_host") if k in info}})

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
            entry["remote_host"] = "https://ollama.com:443"
        return entry


class _UnparseableType:
    """Marks a body that was sent but is not JSON (None means no body at all)."""

    def __repr__(self) -> str:
        return "<unparseable body>"


_Unparseable = _UnparseableType()


# ---------------------------------------------------------------------------- the HTTP server

def _incoming(request: h11.Request, body: bytes,
              client: tuple[str, int] | None) -> RecordedRequest:
    target = urlsplit(request.target.decode("latin-1"))
    headers: dict[str, str] = {}
    for name, value in request.headers:
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return RecordedRequest(request.method.decode("ascii"), target.path,
                           dict(parse_qsl(target.query)), headers, _parse_body(body), body, client)


def _parse_body(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _Unparseable


async def _read_request(conn: h11.Connection, reader: asyncio.StreamReader,
                        client: tuple[str, int] | None) -> RecordedRequest | None:
    """The next complete request on this connection, or None when the client closed it."""
    request, chunks = None, []
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await reader.read(65536))
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            chunks.append(event.data)
        elif isinstance(event, h11.EndOfMessage):
            return _incoming(request, b"".join(chunks), client)
        else:  # ConnectionClosed, or PAUSED after a client's Connection: close
            return None


def _encode(conn: h11.Connection, canned: Canned) -> bytes:
    headers = [("content-type", canned.content_type), ("content-length", str(len(canned.body))),
               ("server", "contam-emulator"), *canned.headers]
    try:
        reason = http.HTTPStatus(canned.status).phrase.encode()
    except ValueError:  # 529 is Anthropic's own
        reason = b"Overloaded" if canned.status == 529 else b""
    out = conn.send(h11.Response(status_code=canned.status, headers=headers, reason=reason))
    if canned.body:
        out += conn.send(h11.Data(data=canned.body))
    return out + conn.send(h11.EndOfMessage())


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (SO_LINGER 0) instead of a polite FIN: a real connection reset."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def _hang(reader: asyncio.StreamReader, seconds: float) -> None:
    """Hold the connection without answering until the client gives up (EOF) or time runs out."""
    with contextlib.suppress(TimeoutError, ConnectionError):
        await asyncio.wait_for(reader.read(), timeout=seconds)


class _HTTPServer:
    """asyncio streams + h11: HTTP/1.1 with keep-alive, one task per connection."""

    def __init__(self, app: _App) -> None:
        self.app = app
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._connection, host, port, backlog=2048)
        return self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        try:
            await self._serve(h11.Connection(h11.SERVER), reader, writer)
        except (ConnectionError, h11.RemoteProtocolError, h11.LocalProtocolError):
            pass  # the client went away or spoke broken HTTP: nothing left to answer
        except asyncio.CancelledError:
            # Only close() cancels these tasks. Ending normally rather than re-raising keeps
            # Python 3.11's stream callback from logging a CancelledError per open connection.
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _serve(self, conn: h11.Connection, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        client = (str(peer[0]), int(peer[1])) if peer else None
        while (incoming := await _read_request(conn, reader, client)) is not None:
            outcome = await self.app.respond(incoming)
            if outcome == _RESET:
                return _reset(writer)
            if outcome == _HANG:
                return await _hang(reader, self.app.settings.hang_s)
            writer.write(_encode(conn, outcome))
            await writer.drain()
            if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()


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

    def base_url(self, provider: str) -> str:
        """The ``base_url`` a [[models]] entry of that provider needs to talk to this emulator."""
        return f"{self.url}/v1" if provider == "openai" else self.url

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
        server = _HTTPServer(self._app)
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
    server = _HTTPServer(_App(settings))
    bound = await server.start(host, port)
    if on_ready is not None:
        on_ready(f"http://{host}:{bound}")
    try:
        await (stop or asyncio.Event()).wait()
    finally:
        await server.close()


# --------------------------------------------------------------------------- contam emulator

def _settings_from_args(args: argparse.Namespace) -> EmulatorSettings:
    try:
        return EmulatorSettings(
            latency_ms=args.latency_ms, jitter_ms=getattr(args, "jitter_ms", 0.0) or 0.0,
            rpm=args.rpm, faults=parse_faults(args.faults or ""), served_model=args.served_model,
            quota_per_day=args.quota_per_day, seed=getattr(args, "seed", None), record=False)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _banner(url: str, settings: EmulatorSettings) -> str:
    lines = [f"contam emulator listening on {url}"]
    lines += [f"  {api:<10} base_url = \"{url}/v1\"" if api == "openai" else
              f"  {api:<10} base_url = \"{url}\"" for api in DIALECTS]
    faults = ",".join(f"{k}={v:g}" for k, v in settings.faults.items()) or "none"
    lines.append(f"latency {settings.latency_ms:g} ms, rpm {settings.rpm or 'unlimited'}, "
                 f"faults {faults}, served model {settings.served_model or 'as asked'}, "
                 f"quota/day {settings.quota_per_day or 'unlimited'}; Ctrl-C stops it")
    lines.append("judge requests (the judge rubric as system prompt) get a label: right when the "
                 "answer holds every reference word, partially right when some, else wrong")
    return "\n".join(lines)


def emulator_command(args: argparse.Namespace) -> int:
    """``contam emulator``: serve in the foreground until SIGINT or SIGTERM."""
    settings = _settings_from_args(args)
    try:
        asyncio.run(_serve_until_signal(settings, args.host, args.port))
    except OSError as exc:
        raise UserError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    return 0


async def _serve_until_signal(settings: EmulatorSettings, host: str, port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await serve(settings, host=host, port=port, stop=stop,
                on_ready=lambda url: print(_banner(url, settings), flush=True))
