"""The engine's client (contam.providers.lean.LeanClient over contam.harness.engine.pool's transport): the same requests
as httpx's client layer sends, nothing kept from one reply to the next, and the proxies the
environment names.
"""

from __future__ import annotations

import asyncio
import contextlib

import httpx
import orjson
import pytest

from contam.harness.config import ModelSpec
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.engine.pool import lane_client
from contam.providers.base import Request
from contam.providers.lean import LeanClient
from contam.providers.reach import environment_proxy
from contam.providers.registry import create_provider

pytestmark = pytest.mark.anyio

QUESTION = Request(system="Answer briefly.", user="Game: Pokemon Red\nQuestion: Who is the rival?")
REPLY = {"id": "x", "model": "gpt-mock", "choices": [{"message": {"content": "Blue"},
                                                      "finish_reason": "stop"}]}


@pytest.fixture(autouse=True)
def environment_without_proxies(monkeypatch):
    """No proxy from the machine's environment, and a key for the OpenAI provider."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-lean-SECRET")


def recording_transport(seen: list[httpx.Request], status: int = 200,
                        headers: dict[str, str] | None = None) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        request.read()
        seen.append(request)
        return httpx.Response(status, content=orjson.dumps(REPLY), headers=headers or {})
    return httpx.MockTransport(handler)


def openai_spec(base_url: str = "http://mock.invalid/v1") -> ModelSpec:
    return ModelSpec(name="gpt", provider="openai", model="gpt-mock", base_url=base_url,
                     timeout_s=7.0)


def sent_as(request: httpx.Request) -> tuple:
    return request.method, str(request.url), sorted(request.headers.items()), request.content


async def test_the_lean_path_sends_what_the_client_layer_sends():
    lean_seen, plain_seen = [], []
    async with LeanClient(transport=recording_transport(lean_seen), timeout=7.0) as lean, \
            httpx.AsyncClient(transport=recording_transport(plain_seen), timeout=7.0) as plain:
        lean_reply = await create_provider(openai_spec(), lean).generate(QUESTION)
        plain_reply = await create_provider(openai_spec(), plain).generate(QUESTION)
    assert lean_reply == plain_reply
    assert sent_as(lean_seen[0]) == sent_as(plain_seen[0])  # user-agent, accept-encoding included
    assert lean_seen[0].extensions["timeout"] == httpx.Timeout(7.0).as_dict()


async def test_a_cookie_set_by_a_reply_does_not_travel_with_the_next_question():
    seen = []
    transport = recording_transport(seen, headers={"set-cookie": "session=abc; Path=/"})
    async with LeanClient(transport=transport, timeout=7.0) as client:
        provider = create_provider(openai_spec(), client)
        await provider.generate(QUESTION)
        await provider.generate(QUESTION)
    assert [request.headers.get("cookie") for request in seen] == [None, None]


async def test_a_redirect_is_answered_not_followed():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(307, headers={"location": "http://elsewhere.invalid/v1"})

    async with LeanClient(transport=httpx.MockTransport(handler), timeout=7.0) as client:
        response = await client.exchange("POST", "http://mock.invalid/v1/chat/completions",
                                         headers={}, content=b"{}", timeout=7.0)
    assert response.status_code == 307 and len(seen) == 1
    assert response.request.url == "http://mock.invalid/v1/chat/completions"


async def test_the_reply_is_read_whole_and_its_stream_closed():
    closed = []

    class Body(httpx.AsyncByteStream):
        async def __aiter__(self):
            yield b'{"ok": '
            yield b"true}"

        async def aclose(self) -> None:
            closed.append(True)

    transport = httpx.MockTransport(lambda request: httpx.Response(200, stream=Body()))
    async with LeanClient(transport=transport, timeout=7.0) as client:
        response = await client.exchange("POST", "http://mock.invalid/x", headers={},
                                         content=None, timeout=7.0)
    assert response.content == b'{"ok": true}' and closed == [True]


@contextlib.asynccontextmanager
async def loopback_proxy(seen_targets: list[str]):
    """An HTTP proxy on loopback that answers every request itself and records its target."""
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        seen_targets.append(head.split(b" ")[1].decode())
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        await reader.readexactly(length)
        body = orjson.dumps(REPLY)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                     b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    async with server:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def test_the_engine_goes_through_the_proxy_the_environment_names(monkeypatch):
    seen_targets: list[str] = []
    async with loopback_proxy(seen_targets) as proxy_url:
        monkeypatch.setenv("HTTP_PROXY", proxy_url)
        async with lane_client(2, 7.0) as client:  # httpx itself would ignore HTTP_PROXY here
            reply = await create_provider(openai_spec("http://api.invalid/v1"), client).generate(
                QUESTION)
    assert reply.text == "Blue"
    assert seen_targets == ["http://api.invalid/v1/chat/completions"]


async def test_no_proxy_exempts_a_host(monkeypatch):
    seen_targets: list[str] = []
    async with loopback_proxy(seen_targets) as proxy_url:
        monkeypatch.setenv("HTTP_PROXY", proxy_url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        with run_emulator(EmulatorSettings()) as emu:
            async with lane_client(2, 7.0) as client:
                spec = ModelSpec(name="gpt", provider="openai", model="gpt-emu-1",
                                 base_url=emu.base_url("openai"), timeout_s=7.0)
                await create_provider(spec, client).generate(QUESTION)
    assert seen_targets == [] and len(emu.requests) == 1


def test_the_proxy_for_a_url_follows_the_environment(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    assert environment_proxy(httpx.URL("https://api.openai.com/v1")) == "http://proxy.example:3128"
    assert environment_proxy(httpx.URL("http://api.openai.com/v1")) is None  # no HTTP_PROXY
    assert environment_proxy(httpx.URL("https://internal.example/v1")) is None
    monkeypatch.setenv("ALL_PROXY", "http://all.example:8080")
    assert environment_proxy(httpx.URL("http://api.openai.com/v1")) == "http://all.example:8080"
