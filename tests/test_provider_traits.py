"""What each provider declares in providers/traits.py (and a batch protocol's ``tags_jobs``) is
what it does on the wire: its requests go to its declared routes, the emulator answers it there,
its samples field is the one its payload carries, and its batch jobs carry contam's tag exactly
when it says so. The engine, the probes, the bench and the emulator read these declarations."""

from __future__ import annotations

from urllib.parse import urlsplit

import anyio
import httpx
import pytest

from contam.harness.config import ModelSpec
from contam.harness.jobs.bench import EMULATOR_PROTOCOLS
from contam.harness.prompts import question_request
from contam.harness.provider_names import BATCH_PROVIDERS, PROVIDERS
from contam.providers.base import Request
from contam.providers.batch import create_batch_protocol
from contam.providers.registry import create_provider, provider_class
from contam.providers.traits import HTTP_PROVIDERS, TRAITS, route_of, traits_of

pytestmark = pytest.mark.usefixtures("keys")
REQUEST = question_request("Answer briefly.", "Pokémon Gold", "Which region follows Johto?",
                           max_output_tokens=64)


def _spec(provider: str, base_url: str) -> ModelSpec:
    return ModelSpec(name="m", provider=provider, model=f"emu-{provider}", base_url=base_url,
                     params={"temperature": 0})


def test_every_provider_declares_its_traits_and_the_bench_speaks_the_http_ones():
    assert set(TRAITS) == set(PROVIDERS)
    assert EMULATOR_PROTOCOLS == HTTP_PROVIDERS == tuple(p for p in PROVIDERS if p != "local")


@pytest.mark.parametrize("provider", HTTP_PROVIDERS)
def test_a_providers_requests_go_to_a_route_it_declares(provider):
    endpoint = create_provider(_spec(provider, "http://h" + traits_of(provider).base_path),
                               None).endpoint()
    assert route_of("POST", urlsplit(endpoint).path)[:2] == ("generate", provider)


def test_a_route_naming_the_model_in_its_path_gives_the_model():
    assert route_of("POST", "/v1beta/models/emu-gemini:generateContent") == \
        ("generate", "gemini", "emu-gemini")
    assert route_of("GET", "/v1/chat/completions") is None


@pytest.mark.parametrize("provider", HTTP_PROVIDERS)
def test_the_emulator_answers_each_provider_at_its_declared_base_url(provider, emulator):
    emu = emulator()
    spec = _spec(provider, emu.base_url(provider))

    async def ask() -> str | None:
        async with httpx.AsyncClient() as client:
            return (await create_provider(spec, client).generate(REQUEST)).text

    assert anyio.run(ask)
    assert route_of(emu.requests[-1].method, emu.requests[-1].path)[1] == provider


def _holds_field(payload: object, field: str, value: int) -> bool:
    if isinstance(payload, dict):
        return payload.get(field) == value or any(_holds_field(v, field, value) for v in payload.values())
    return False


@pytest.mark.parametrize("provider", HTTP_PROVIDERS)
def test_the_samples_field_is_the_one_the_payload_carries(provider):
    field, cls = traits_of(provider).samples_field, provider_class(_spec(provider, "http://h"))
    if field is None:  # no multi-sample field: never asked for more than one
        assert cls.max_samples == 1
        return
    provider_object = create_provider(_spec(provider, "http://h"), None)
    request = Request(system=REQUEST.system, user=REQUEST.user, samples=3)
    assert _holds_field(provider_object.payload(request), field, 3)


@pytest.mark.parametrize("provider", BATCH_PROVIDERS)
def test_a_batch_job_carries_contams_tag_exactly_when_its_protocol_says_so(provider, emulator):
    emu = emulator()
    spec = _spec(provider, emu.base_url(provider))

    async def submit_and_list():
        async with httpx.AsyncClient() as client:
            protocol = create_batch_protocol(create_provider(spec, client), client)
            await protocol.submit([protocol.line("cell-1", REQUEST)], "contam:run:key")
            return protocol.tags_jobs, await protocol.list_jobs()

    tags_jobs, jobs = anyio.run(submit_and_list)
    assert [job.tag == "contam:run:key" for job in jobs] == [tags_jobs]
