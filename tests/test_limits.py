"""Per-lane admission: the token estimate, the buckets' pacing and the cool-down gate."""

from __future__ import annotations

import time

import anyio
import pytest

from contam.harness.config import ModelSpec
from contam.harness.engine.limits import OUTPUT_TOKENS_GUESS, LaneLimits, bucket, estimate_tokens
from contam.providers.base import Request


def spec(**overrides) -> ModelSpec:
    return ModelSpec(**{"name": "m", "provider": "openai", "model": "m", **overrides})


def test_token_estimate_is_a_quarter_of_the_characters_plus_the_output_cap():
    request = Request(system="s" * 40, user="u" * 41, max_output_tokens=100)
    assert estimate_tokens(request) == 21 + 100
    assert estimate_tokens(Request(system="", user="abcd")) == 1 + OUTPUT_TOKENS_GUESS


def test_token_estimate_counts_the_prompt_once_and_the_output_per_completion():
    request = Request(system="s" * 40, user="u" * 41, max_output_tokens=100, samples=20)
    assert estimate_tokens(request) == 21 + 20 * 100


def test_the_gate_holds_requests_for_the_hint_and_never_shortens_it():
    limits = LaneLimits(spec())

    async def main():
        limits.cool_down(0.25)
        limits.cool_down(0.05)  # a shorter hint does not reopen the gate early
        assert 0.2 < limits.cooling_for() <= 0.25
        started = time.monotonic()
        await limits.admit(Request(system="s", user="u"))
        return time.monotonic() - started

    assert anyio.run(main) >= 0.24
    assert limits.cooling_for() == 0.0


def test_the_request_bucket_paces_instead_of_bursting():
    limiter = bucket(1200)  # one request at a time, about every 51 ms

    async def main():
        started = time.monotonic()
        for _ in range(5):
            await limiter.acquire()
        return time.monotonic() - started

    assert anyio.run(main) >= 4 * 60 / 1200
    assert limiter.max_rate == 1


@pytest.mark.parametrize("tpm", [100, 1_000_000])
def test_a_request_larger_than_the_token_bucket_is_still_admitted(tpm):
    limits = LaneLimits(spec(tpm=tpm, rpm=100_000))
    anyio.run(limits.admit, Request(system="s" * 4000, user="u"))


def test_workers_held_by_a_cool_down_leave_paced_not_in_a_burst():
    """Workers that got their tokens while a cool-down began queue for new ones after it: the
    bucket paces them (one every 30 ms here) instead of letting them all out at its end."""
    limits = LaneLimits(spec(rpm=2000 / 0.98))  # one request every 30 ms
    sent: list[float] = []

    async def worker():
        await limits.admit(Request(system="s", user="u"))
        sent.append(time.monotonic())

    async def main():
        async with anyio.create_task_group() as group:
            for _ in range(8):
                group.start_soon(worker)
            await anyio.sleep(0.045)  # two have gone, a third holds a token, five queue for theirs
            limits.cool_down(0.3)  # a 429 came back: everyone waits ...
            opened = time.monotonic() + 0.3
        return opened

    opened = anyio.run(main)
    after = sorted(t for t in sent if t >= opened - 0.01)
    assert len(after) >= 5
    gaps = [later - earlier for earlier, later in zip(after, after[1:])]
    assert min(gaps) >= 0.02  # ... and then leaves one at a time
