"""Ollama specifics (preflight, tag normalisation, optional key) and the provider registry."""

from __future__ import annotations

import socket
import sys
import types

import httpx
import pytest

from contam.harness.config import ModelSpec
from contam.providers.base import Fatal, MissingKey, Reply, Request, ServedModelMismatch
from contam.providers.ollama import OllamaProvider, normalise_model_id
from contam.providers.registry import PROVIDER_CLASSES, check_first_reply, create_provider, served_model_id

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def no_ollama_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)


@pytest.fixture
def no_connection_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every HTTP provider's preflight begins with a TCP connection check of its server; the
    tests that answer through a mock transport name hosts that resolve nowhere, so it passes."""
    async def reachable(url: str, *, label: str, timeout: float) -> None:
        return None

    monkeypatch.setattr("contam.providers.transport.check_reachable", reachable)


def ollama_spec(base_url: str, model: str = "llama3.2", **overrides) -> ModelSpec:
    return ModelSpec(name="local-llama", provider="ollama", model=model, base_url=base_url,
                     timeout_s=2.0, **overrides)


async def preflight(spec: ModelSpec) -> str:
    async with httpx.AsyncClient() as client:
        return await OllamaProvider(spec, client).preflight()


@pytest.mark.parametrize(("model", "normalised"), [
    ("llama3.2:latest", "llama3.2"), ("llama3.2", "llama3.2"),
    ("gpt-oss:120b-cloud", "gpt-oss:120b"), ("qwen3:8b", "qwen3:8b"), (None, None),
])
def test_normalise_model_id(model: str | None, normalised: str | None) -> None:
    assert normalise_model_id(model) == normalised


async def test_preflight_reports_a_local_tag(emulator) -> None:
    emu = emulator()
    text = await preflight(ollama_spec(emu.url))
    assert "resolves locally" in text and "0.13.0" in text
    assert [r.path for r in emu.requests] == ["/api/version", "/api/show"]


async def test_preflight_says_an_emulated_cloud_tag_reaches_nothing_outside(emulator) -> None:
    """Against contam emulator a cloud tag is not 'proxied to ollama.com'."""
    emu = emulator()
    text = await preflight(ollama_spec(emu.url, model="gpt-oss:120b-cloud"))
    assert f"at {emu.url}: gpt-oss:120b-cloud is a cloud tag emulated by contam emulator" in text
    assert "nothing reaches https://ollama.com:443" in text and "proxied" not in text


async def test_preflight_reports_a_cloud_proxied_tag(no_connection_check) -> None:
    """A real Ollama server's /api/show of a cloud tag names its remote host (and no emulation)."""
    show = b'{"remote_model": "gpt-oss:120b", "remote_host": "https://ollama.com:443"}'
    async with httpx.AsyncClient(transport=compatible_server(200, show)) as client:
        text = await OllamaProvider(ollama_spec("http://ollama.test", model="gpt-oss:120b-cloud"),
                                    client).preflight()
    assert "gpt-oss:120b-cloud is proxied to https://ollama.com:443 (runs remotely" in text


async def test_preflight_refuses_a_tag_the_server_lacks(emulator) -> None:
    emu = emulator(known_models=frozenset({"qwen3:8b"}))
    with pytest.raises(Fatal, match="ollama pull llama3.2"):
        await preflight(ollama_spec(emu.url))


async def test_preflight_refuses_an_unreachable_server() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(Fatal, match="not reachable") as caught:
        await preflight(ollama_spec(f"http://127.0.0.1:{port}"))
    assert not caught.value.retryable


async def test_preflight_refuses_a_server_that_is_not_ollama(emulator) -> None:
    emu = emulator()
    with pytest.raises(Fatal, match="is this an Ollama server"):
        await preflight(ollama_spec(f"{emu.url}/nothing-here"))


async def test_latest_and_cloud_suffixes_compare_equal(emulator) -> None:
    emu = emulator(served_model="gpt-oss:120b")
    async with httpx.AsyncClient() as client:
        llm = create_provider(ollama_spec(emu.url, model="gpt-oss:120b-cloud"), client)
        reply = await llm.generate(Request(system="s", user="u"))
    assert served_model_id(llm) == "gpt-oss:120b"
    check_first_reply(llm, reply)
    latest = create_provider(ollama_spec(emu.url, model="llama3.2"), None)
    check_first_reply(latest, Reply(text="x", served_model=normalise_model_id("llama3.2:latest")))
    with pytest.raises(ServedModelMismatch):
        check_first_reply(latest, Reply(text="x", served_model="llama3.1"))


async def test_key_is_optional_and_sent_as_bearer_when_set(emulator, monkeypatch) -> None:
    emu = emulator()
    async with httpx.AsyncClient() as client:
        await create_provider(ollama_spec(emu.url), client).generate(Request(system="s", user="u"))
        monkeypatch.setenv("OLLAMA_API_KEY", "ollama-SECRET-1")
        await create_provider(ollama_spec(emu.url), client).generate(Request(system="s", user="u"))
    without, with_key = emu.requests
    assert "authorization" not in without.headers
    assert with_key.headers["authorization"] == "Bearer ollama-SECRET-1"


def test_a_named_key_variable_is_required(monkeypatch) -> None:
    monkeypatch.delenv("MY_OLLAMA_KEY", raising=False)
    with pytest.raises(MissingKey, match="MY_OLLAMA_KEY"):
        create_provider(ollama_spec("http://x", api_key_env="MY_OLLAMA_KEY"), None)


async def test_other_providers_have_a_no_op_preflight(monkeypatch, no_connection_check) -> None:
    for name in ("openai", "gemini", "anthropic"):
        monkeypatch.setenv(f"{name.upper()}_API_KEY", "registry-test-key-0042")
        spec = ModelSpec(name=name, provider=name, model="m")
        assert await create_provider(spec, None).preflight() is None


def test_registry_maps_every_provider_and_refuses_unknown(monkeypatch) -> None:
    for name in ("openai", "gemini", "anthropic"):
        monkeypatch.setenv(f"{name.upper()}_API_KEY", "registry-test-key-0042")
    for name in ("openai", "gemini", "anthropic", "ollama"):
        provider = create_provider(ModelSpec(name=name, provider=name, model="m"), None)
        assert type(provider).__name__ == PROVIDER_CLASSES[name][1]
    with pytest.raises(Fatal, match="unknown provider 'mistral'"):
        create_provider(ModelSpec(name="x", provider="mistral", model="m"), None)


def test_local_provider_is_imported_lazily_by_name(monkeypatch) -> None:
    built = []

    class LocalProvider:
        def __init__(self, spec, client=None):
            built.append((spec.model, client))

    monkeypatch.setitem(sys.modules, "contam.providers.local",
                        types.SimpleNamespace(LocalProvider=LocalProvider))
    create_provider(ModelSpec(name="tiny", provider="local", model="smollm2"), None)
    assert built == [("smollm2", None)]


def test_default_base_urls_follow_the_design() -> None:
    assert OllamaProvider(ollama_spec(None), None).endpoint() == "http://localhost:11434/api/generate"


def compatible_server(show_status: int, show_body: bytes) -> httpx.MockTransport:
    """An Ollama-compatible server: /api/version and /api/generate work, /api/show answers as told."""
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/version":
            return httpx.Response(200, json={"version": "0.0-compatible"})
        if request.url.path == "/api/show":
            return httpx.Response(show_status, content=show_body)
        return httpx.Response(200, json={"model": "llama3.2", "response": "hi", "done": True})
    return httpx.MockTransport(handle)


@pytest.mark.parametrize("body", [b"404 page not found", b'{"error": "no such endpoint"}', b""])
async def test_a_404_without_ollamas_no_model_body_is_noted_and_the_lane_goes_on(
        body, no_connection_check) -> None:
    spec = ollama_spec("http://compatible.test")
    async with httpx.AsyncClient(transport=compatible_server(404, body)) as client:
        provider = OllamaProvider(spec, client)
        text = await provider.preflight()
        reply = await provider.generate(Request(system="s", user="u"))
    assert "could not inspect it: HTTP 404" in text and reply.text == "hi"


@pytest.mark.parametrize("body", [b'{"error": "model \'llama3.2\' not found"}',
                                  b'{"error":"model \\"llama3.2\\" not found, try pulling it first"}'])
async def test_ollamas_own_model_not_found_404_stops_the_lane(body, no_connection_check) -> None:
    async with httpx.AsyncClient(transport=compatible_server(404, body)) as client:
        with pytest.raises(Fatal, match="has no model 'llama3.2'"):
            await OllamaProvider(ollama_spec("http://compatible.test"), client).preflight()


def test_the_config_knows_exactly_the_registered_providers() -> None:
    from contam.harness.config import PROVIDERS

    assert PROVIDERS == tuple(PROVIDER_CLASSES)


def test_every_registered_class_is_a_provider() -> None:
    import importlib

    from contam.providers.base import Provider

    for module_name, class_name in PROVIDER_CLASSES.values():
        cls = getattr(importlib.import_module(module_name), class_name)
        assert issubclass(cls, Provider)
