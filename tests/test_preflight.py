"""Before a lane sends anything, each of its servers must be a URL and accept a connection: a
provider that is down stops its model in one line within seconds (it took 34 s of timeouts and
retries), a bad replica is left out in one line while the others answer, and the check itself sends
nothing, so no key, to anyone."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import anyio
import pytest

from contam.harness.emulator.server import run_emulator
from contam.harness.store import Store
from contam.providers.base import Fatal, Transient
from contam.providers.reach import check_reachable, url_problem
from tests.runkit import model_entry, run_inprocess, write_config


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def listener() -> Iterator[dict]:
    """A bare TCP server: counts the connections that ended and keeps every byte they sent."""
    seen = {"connections": 0, "bytes": b""}
    server = socket.create_server(("127.0.0.1", 0))
    seen["port"] = server.getsockname()[1]
    server.settimeout(0.05)  # accept() wakes up to see the test end
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(1)
                with contextlib.suppress(OSError):
                    while chunk := conn.recv(65536):
                        seen["bytes"] += chunk
            seen["connections"] += 1

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield seen
        deadline = time.monotonic() + 5
        while not seen["connections"] and time.monotonic() < deadline:  # the client has gone
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()


def check(url: str, timeout: float = 2.0) -> None:
    anyio.run(lambda: check_reachable(url, label="openai model 'm'", timeout=timeout))


@pytest.mark.parametrize(("url", "problem"), [
    ("not a url", "is not an http:// or https:// URL"),
    ("ftp://x/", "is not an http:// or https:// URL"),
    ("http://", "names no host"),
    ("http://127.0.0.1:70000/v1", "is not a URL (Port out of range 0-65535)"),
    ("http://127.0.0.1:0", "names port 0"),
    ("https://api.openai.com/v1", None),
    ("http://[::1]:8000/v1", None),
])
def test_a_base_url_no_request_could_go_to_is_named(url, problem):
    assert url_problem(url) == problem
    if problem:
        with pytest.raises(Fatal, match="base_url"):
            check(url)


def test_a_server_that_refuses_connections_is_transient_and_named():
    port = closed_port()
    with pytest.raises(Transient) as caught:
        check(f"http://127.0.0.1:{port}/v1")
    assert str(caught.value) == (f"openai model 'm': cannot connect to 127.0.0.1:{port} "
                                 f"(ConnectionRefusedError: Connect call failed ('127.0.0.1', {port})); "
                                 f"is the server up? (base_url 'http://127.0.0.1:{port}/v1')")


def test_a_server_that_never_answers_the_connection_times_out_quickly(monkeypatch):
    async def never(*args, **kwargs):
        await anyio.sleep(3600)

    monkeypatch.setattr(anyio, "connect_tcp", never)
    with pytest.raises(Transient, match="did not accept a connection within 0.2 s"):
        check("http://203.0.113.9:8000/v1", timeout=0.2)


def test_the_check_connects_and_sends_nothing():
    with listener() as seen:
        check(f"http://127.0.0.1:{seen['port']}/v1")
    assert seen["connections"] == 1 and seen["bytes"] == b""


def test_behind_a_proxy_the_check_connects_to_the_proxy_and_sends_it_nothing(monkeypatch):
    with listener() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy['port']}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        check("https://api.example.invalid/v1")  # unresolvable: only the proxy is asked
    assert proxy["connections"] == 1 and proxy["bytes"] == b""


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "ollama"])
def test_a_provider_that_is_down_stops_its_model_in_one_line_before_sending(tmp_path, keys,
                                                                            provider):
    with run_emulator() as emu:
        down = model_entry(provider, emu, name="down", base_url=f"http://127.0.0.1:{closed_port()}",
                           timeout_s=60, max_attempts=5)
        config = write_config(tmp_path, [down, model_entry("openai", emu, name="up")], items=3)
        result = run_inprocess(config, tmp_path / "s.duckdb")
    assert result.status == 1
    lines = [line for line in result.out.splitlines() if line.startswith("down:")]
    assert lines[0].startswith("down: STOPPED (unreachable): ")  # the notice, as it happens
    assert lines[1].startswith("down: 0/3 answered; STOPPED (unreachable): ")  # the summary
    assert "cannot connect to 127.0.0.1:" in lines[1] and len(lines) == 2
    assert "up: 3/3 answered" in result.out
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        assert store.query("SELECT count(*) FROM attempts WHERE model = 'down'") == [(0,)]


def test_bad_replicas_are_left_out_in_one_line_each_and_the_good_one_answers(tmp_path, keys):
    with run_emulator() as emu:
        good = emu.base_url("openai")
        entry = model_entry("openai", emu, base_url=[good, "not a url", "ftp://x/"])
        result = run_inprocess(write_config(tmp_path, [entry], items=6), tmp_path / "s.duckdb")
    assert result.status == 0, result.out + result.err
    everything = result.out + result.err
    for url, problem in [("not a url", "is not an http:// or https:// URL"),
                         ("ftp://x/", "is not an http:// or https:// URL")]:
        line = f"openai-m: replica {url} left out: openai model 'openai-m': base_url"
        assert everything.count(line) == 1, everything
        assert problem in next(text for text in everything.splitlines() if text.startswith(line))
    assert "openai-m: 6/6 answered" in result.out
    assert "openai-m replica ftp://x/  left out (fatal)" in result.out  # the display's line
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        assert store.query("SELECT DISTINCT replica FROM attempts") == [(good,)]


def test_a_model_with_no_replica_left_stops_in_one_line(tmp_path, keys):
    with run_emulator() as emu:
        dead = f"http://127.0.0.1:{closed_port()}/v1"
        entry = model_entry("openai", emu, base_url=[dead, "ftp://x/"])
        result = run_inprocess(write_config(tmp_path, [entry], items=2), tmp_path / "s.duckdb")
    assert result.status == 1
    lines = [line for line in result.out.splitlines() if line.startswith("openai-m")]
    assert len(lines) == 2 and "left out" not in result.out
    assert lines[1].startswith("openai-m: 0/2 answered; STOPPED (unreachable): model 'openai-m': "
                               "no replica left: ")
    assert f"base_url '{dead}'" in lines[1] and "base_url 'ftp://x'" in lines[1]


def test_a_port_beyond_65535_is_one_line_naming_it_not_an_exception_group(tmp_path, keys, contam):
    with run_emulator() as emu:
        entry = model_entry("openai", emu, base_url="http://127.0.0.1:70000/v1")
        config = write_config(tmp_path, [entry], items=2)
        status, out, err = contam("run", config, "--store", tmp_path / "s.duckdb", "--no-progress")
    assert status == 1 and "ExceptionGroup" not in out + err
    assert ("openai-m: 0/2 answered; STOPPED (fatal): openai model 'openai-m': base_url "
            "'http://127.0.0.1:70000/v1' is not a URL (Port out of range 0-65535)") in out


def test_a_min_k_probe_against_a_server_that_is_down_stops_in_one_line_before_asking(tmp_path, keys,
                                                                                    contam):
    """The connection check is the provider's preflight, so the min-k probe's TextScorer, which
    forwards only the preflight, checks too (it skipped the check while the engine ran it)."""
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    entry = {"name": "vllm", "provider": "openai", "model": "m", "base_url": dead,
             "max_attempts": 3}
    config = write_config(tmp_path, [entry], items=2, store="s.duckdb")
    status, out, _ = contam("probe", "min-k", config, "--no-progress")
    assert status == 1
    lines = [line for line in out.splitlines() if line.startswith("vllm:")]
    assert lines[0].startswith("vllm: STOPPED (unreachable): ")
    assert "cannot connect to 127.0.0.1:" in lines[0] and len(lines) == 2
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        assert store.query("SELECT count(*) FROM attempts") == [(0,)]
