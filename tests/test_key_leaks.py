"""A canary key through every failure path `contam run` has, then `contam report` and `contam sql`:
the canary (or any spelling of it) appears nowhere a user or a file could see it."""

from __future__ import annotations

import collections
import contextlib
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from contam.harness.config import ModelSpec
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.logs import configure_logging
from contam.providers.base import BadKey, redact, register_secret, resolve_api_key, secret_forms
from tests.runkit import model_entry, run_inprocess, store_text, write_config

CANARY = "CANARYd0n0tl3ak7f3a"
KEYS = {
    "OPENAI_API_KEY": f"sk-{CANARY}-openai",
    "GEMINI_API_KEY": f"AIza-{CANARY}-gemini",
    "ANTHROPIC_API_KEY": f"sk-ant-{CANARY}-anthropic",
    "CANARY_NEWLINE_KEY": f"sk-{CANARY}\nX-Injected: 1",
    "CANARY_NON_ASCII_KEY": f"sk-{CANARY}-caf\u00e9",
    "CANARY_BIDI_KEY": f"sk-{CANARY}\u202e\x1b[31m",
}


@pytest.fixture(autouse=True)
def canary_keys(monkeypatch):
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def every_failure_config(tmp_path: Path, auth: object, faulty: object) -> Path:
    entries = [
        model_entry("openai", auth, name="unauthorised", concurrency=1),
        model_entry("gemini", faulty, name="faulty", concurrency=1, max_attempts=6, timeout_s=0.5),
        model_entry("anthropic", faulty, name="refused", base_url=closed_port_url(), max_attempts=2),
        model_entry("openai", faulty, name="newline-key", api_key_env="CANARY_NEWLINE_KEY"),
        model_entry("anthropic", faulty, name="non-ascii-key", api_key_env="CANARY_NON_ASCII_KEY"),
        model_entry("ollama", faulty, name="bidi-key", api_key_env="CANARY_BIDI_KEY"),
    ]
    return write_config(tmp_path, entries, items=3)


def test_a_canary_key_never_leaks_through_any_failure_path(tmp_path, contam, capsys):
    store, out_dir = tmp_path / "s.duckdb", tmp_path / "report"
    auth = EmulatorSettings(api_keys=frozenset({"the-right-key"}))
    faulty = EmulatorSettings(script=["429:0.05", "500", "malformed", "hang", "reset"], hang_s=2)
    with run_emulator(auth) as auth_emu, run_emulator(faulty) as faulty_emu:
        config = every_failure_config(tmp_path, auth_emu, faulty_emu)
        run = run_inprocess(config, store)  # `contam run` with fast retries
        sent_paths = [request.path for request in faulty_emu.requests]
    report_status, report_out, report_err = contam("report", "--store", store, "--out", out_dir)
    sql_status, sql_out, sql_err = contam("sql", "--store", store, "--format", "csv",
                                          "select outcome from attempts")
    captured = capsys.readouterr()
    outcomes = set(sql_out.splitlines()[1:])
    run_out, run_err = run.out, run.err
    assert run.status == 1 and report_status == 0 and sql_status == 0
    assert {"ok", "rate_limited", "transient", "timeout", "fatal"} <= outcomes
    assert "refused: 0/3 answered; STOPPED (unreachable)" in run_out  # its connection check
    for name, reason in [("unauthorised", "auth"), ("newline-key", "bad key"), ("non-ascii-key", "bad key"),
                         ("bidi-key", "bad key")]:
        assert f"{name}: 0/3 answered; STOPPED ({reason})" in run_out, run_out
    assert "/v1/chat/completions" not in sent_paths and "/api/generate" not in sent_paths
    assert "CANARY_NEWLINE_KEY holds whitespace inside the key" in run_out
    report_files = "\n".join(path.read_text(errors="replace") for path in out_dir.rglob("*")
                             if path.suffix in (".md", ".html", ".json"))
    everything = "\n".join([store_text(store), run_out, run_err, report_out, report_err, sql_out,
                            sql_err, captured.out, captured.err, report_files])
    assert CANARY not in everything


def test_a_bad_key_is_refused_naming_the_variable_not_the_value(monkeypatch):
    spec = ModelSpec(name="m", provider="openai", model="x", api_key_env="CANARY_NEWLINE_KEY")
    with pytest.raises(BadKey) as caught:
        resolve_api_key(spec)
    assert "CANARY_NEWLINE_KEY" in str(caught.value) and CANARY not in str(caught.value)
    monkeypatch.setenv("CANARY_OK_KEY", f"  sk-{CANARY}-fine\n")  # surrounding blanks are trimmed
    fine = ModelSpec(name="m", provider="openai", model="x", api_key_env="CANARY_OK_KEY")
    assert resolve_api_key(fine) == f"sk-{CANARY}-fine"


@pytest.mark.parametrize("key", [KEYS["CANARY_NEWLINE_KEY"], KEYS["CANARY_NON_ASCII_KEY"],
                                 KEYS["CANARY_BIDI_KEY"], f"sk-{CANARY}/+?&= x"])
def test_redaction_covers_the_escaped_forms_of_a_key(key):
    register_secret(key)
    quoted = [key, repr(key), repr(key.encode()), f"Illegal header value b'Bearer {key!r}'",
              key.encode("unicode_escape").decode()]
    for text in quoted + [form for form in secret_forms(key)]:
        assert CANARY not in redact(f"error: {text} (end)")
    assert redact("an ordinary message") == "an ordinary message"


def test_a_header_httpx_cannot_encode_is_fatal_without_its_value():
    import anyio
    import httpx

    from contam.providers.base import Fatal
    from contam.providers.transport import send

    async def main() -> str:
        transport = httpx.MockTransport(lambda request: httpx.Response(200))
        async with httpx.AsyncClient(transport=transport) as client:
            try:
                await send(client, "POST", "http://x.test/", label="m", timeout=1,
                           headers={"authorization": f"Bearer {KEYS['CANARY_NON_ASCII_KEY']}"})
            except Fatal as exc:
                return str(exc)
        return "sent"

    message = anyio.run(main)
    assert message == "m: a request header holds a non-ASCII character"


# -- a server that echoes the key back, in every spelling, in its error replies -----------------

LONG_KEY = f"sk-{CANARY}-" + "k" * 10_000  # cut to 500 characters by the error path


def base64_spellings(secret: bytes) -> list[str]:
    """The base64 texts a server may echo: the key alone (standard, URL-safe, padded or not), and
    inside a longer encoded string at each byte alignment (``Basic base64(user:key)``), at its
    end or followed by more."""
    import base64

    echoes = []
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(secret).decode()
        echoes += [whole, whole.rstrip("=")]
        echoes += [encode(prefix + secret + suffix).decode() for prefix in (b"u:", b"user:", b"Bearer ")
                   for suffix in (b"", b":x")]
    return echoes


def canary_spellings() -> list[str]:
    """The canary, and its base64 at each of the three alignments in both alphabets (only the
    characters its own bytes decide), none of which may appear anywhere."""
    import base64

    spellings = [CANARY]
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for offset in range(3):
            encoded = encode(bytes(offset) + CANARY.encode()).decode()
            spellings.append(encoded[4 * bool(offset):4 * ((offset + len(CANARY)) // 3)])
    return spellings


@contextlib.contextmanager
def echoing_server() -> Iterator[str]:
    """Answers every POST with a 500 whose body quotes the request's key: as it is and in every
    base64 spelling, a different one first each time (so each reaches the front of a message
    that is cut); JSON bodies, but an HTML page to Anthropic's path. GETs get an Ollama version."""
    counts: collections.Counter[str] = collections.Counter()

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._reply(200, b'{"version": "0.0-echo"}', "application/json")

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            key = next(value.removeprefix("Bearer ") for name in ("authorization", "x-api-key",
                       "x-goog-api-key") if (value := self.headers.get(name)))
            echoes = [key, *base64_spellings(key.encode())]
            turn = counts[key] % len(echoes)
            counts[key] += 1
            message = "invalid key: " + " ".join(echoes[turn:] + echoes[:turn])
            if self.path == "/v1/messages":
                self._reply(500, f"<html><body>{message}</body></html>".encode(), "text/html")
            else:
                body = {"error": {"message": message, "code": 500}}
                self._reply(500, json.dumps(body).encode(), "application/json")

        def _reply(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_canary_spellings_are_what_an_unscrubbed_echo_would_show():
    """The spellings the next test looks for do appear in the echoes, unscrubbed."""
    echoes = " ".join([LONG_KEY, *base64_spellings(LONG_KEY.encode())])
    assert all(spelling in echoes for spelling in canary_spellings())


def test_a_key_echoed_back_in_base64_or_past_the_cut_never_leaks(tmp_path, monkeypatch, contam):
    monkeypatch.setenv("CANARY_LONG_KEY", LONG_KEY)
    monkeypatch.setenv("CANARY_OLLAMA_KEY", f"sk-{CANARY}-ollama")
    store = tmp_path / "s.duckdb"
    with echoing_server() as url:
        entries = [
            {"name": "long-openai", "provider": "openai", "base_url": f"{url}/v1",
             "api_key_env": "CANARY_LONG_KEY"},
            {"name": "long-anthropic", "provider": "anthropic", "base_url": url,
             "api_key_env": "CANARY_LONG_KEY"},
            {"name": "openai", "provider": "openai", "base_url": f"{url}/v1"},
            {"name": "gemini", "provider": "gemini", "base_url": url},
            {"name": "ollama", "provider": "ollama", "base_url": url,
             "api_key_env": "CANARY_OLLAMA_KEY"},
        ]
        entries = [{**entry, "model": "m", "concurrency": 2, "max_attempts": 5} for entry in entries]
        configure_logging(2)  # -vv: every attempt's error on stderr too
        try:
            run = run_inprocess(write_config(tmp_path, entries, items=4), store)
        finally:
            configure_logging(0)
    _, sql_out, _ = contam("sql", "--store", store, "--format", "csv",
                           "select model, error from attempts")
    logs = "\n".join(path.read_text() for path in tmp_path.glob("*.log"))
    everything = "\n".join([store_text(store), run.out, run.err, logs, sql_out])
    for spelling in canary_spellings():
        assert spelling not in everything, spelling
    assert run.status == 1 and logs and "attempt 5/5" in run.err
    for name in ("long-openai", "long-anthropic", "openai", "gemini", "ollama"):
        assert f"{name}: 4 failed — Transient:" in run.out, run.out
    assert sql_out.count("[REDACTED]") >= 5 * 4 * 5  # every attempt's error quoted the key


@pytest.mark.parametrize("key", [KEYS["CANARY_NON_ASCII_KEY"], f"sk-{CANARY}-ab", f"sk-{CANARY}-abc",
                                 f"sk-{CANARY}?>>>~~~", LONG_KEY])
def test_redaction_covers_base64_at_every_alignment(key):
    register_secret(key)
    for echo in base64_spellings(key.encode()):
        scrubbed = redact(f"error: {echo}; {echo}")
        assert not any(spelling in scrubbed for spelling in canary_spellings()), echo
