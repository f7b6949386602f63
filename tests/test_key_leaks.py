"""A canary key through every failure path `contam run` has, then `contam report` and `contam sql`:
the canary (or any spelling of it) appears nowhere a user or a file could see it."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from harness.config import ModelSpec
from harness.emulator.server import EmulatorSettings, run_emulator
from providers.base import BadKey, redact, register_secret, resolve_api_key, secret_forms
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
    assert "refused: 0/3 answered, 3 failed after all attempts" in run_out
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

    from providers.base import Fatal
    from providers.transport import send

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
