"""Per-lane admission control: request and token buckets, and the cool-down gate.

A lane (one configured model) sends a request only after :meth:`LaneLimits.admit` returns:

1. the RPM bucket (and the TPM bucket, where ``tpm`` is set) has capacity — aiolimiter's leaky
   bucket, so the harness never exceeds the configured rate on average;
2. the cool-down gate is open — after a 429 that carried a hint (``Retry-After``, Gemini
   ``RetryInfo``...), the whole lane waits until ``now + hint``: the server said it is not
   accepting this model's requests before then, so sending any would only earn more 429s.

The gate is checked again *after* the buckets, right before the request leaves, so a 429 that
arrives while a request waits for a token still holds that request back; such a request then
queues for a fresh token after the cool-down, so the lane resumes at the bucket's pace instead
of in a burst (which had earned a 429 per worker at the end of every cool-down).

Concurrency is not a bucket: the engine runs exactly ``spec.concurrency`` workers per lane.

aiolimiter is asyncio-only, so the engine runs on anyio's asyncio backend (the default).
"""

from __future__ import annotations

import math
import time

import anyio
from aiolimiter import AsyncLimiter

from contam.harness.config import ModelSpec
from contam.providers.base import Request

__all__ = ["LaneLimits", "estimate_tokens", "bucket", "OUTPUT_TOKENS_GUESS", "CHARS_PER_TOKEN",
           "RATE_HEADROOM"]

# The token estimate charged to the TPM bucket before a request is sent. Providers count a
# request's input tokens *and* the output it may produce against TPM; the exact tokenizer is not
# known client-side, so: input ≈ characters / 4 (OpenAI's published rule of thumb for English),
# plus the request's output cap, or a guess of 64 tokens (a bare 1-2 sentence answer) when the
# request sets none, once per completion a multi-sample request asks for (the prompt is counted
# once, which is what asking for n completions in one request saves). An underestimate is corrected by the server's 429 hint, an overestimate
# only makes the lane a little slower than the limit.
CHARS_PER_TOKEN = 4
OUTPUT_TOKENS_GUESS = 64
# The buckets refill at 98% of the configured rate: servers count over their own clock and window,
# and a request that lands a millisecond early is a 429.
RATE_HEADROOM = 0.98


def estimate_tokens(request: Request) -> int:
    """Tokens charged to the TPM bucket for ``request`` (see the module comment)."""
    chars = len(request.system) + len(request.user)
    output = request.max_output_tokens or OUTPUT_TOKENS_GUESS
    return math.ceil(chars / CHARS_PER_TOKEN) + output * request.samples


def bucket(per_minute: float, *, burst: float = 1.0) -> AsyncLimiter:
    """A leaky bucket that lets ``burst`` out at once and refills at ``RATE_HEADROOM`` of
    ``per_minute``.

    Not aiolimiter's ``AsyncLimiter(rate, 60)``: that lets a whole minute's allowance out in the
    first instant, and a server counting over a sliding minute then sees the burst *plus* the
    steady rate and answers 429. A bucket of ``burst`` refilling at rate r sends at most
    ``burst + 60 r`` in any minute; with a burst of one request and r a hair under the limit,
    that stays within it, even across the jitter of two clocks.
    """
    rate_per_s = per_minute * RATE_HEADROOM / 60.0
    return AsyncLimiter(burst, time_period=burst / rate_per_s)


class LaneLimits:
    """The buckets and the cool-down gate of one lane."""

    def __init__(self, spec: ModelSpec) -> None:
        self.rpm = spec.rpm
        self._requests = bucket(spec.rpm) if spec.rpm else None
        # One second's worth of tokens, but room for at least one sizeable request.
        self._tokens = bucket(spec.tpm, burst=max(spec.tpm / 60, min(spec.tpm, 2_000))) if spec.tpm else None
        # time.monotonic() before which nothing of this lane is sent. Monotonic (asyncio's own loop
        # clock) rather than anyio.current_time() so the progress thread can read the countdown.
        self._open_at = 0.0

    async def admit(self, request: Request) -> None:
        """Wait until ``request`` may be sent now."""
        if self._requests is None and self._tokens is None:
            await self.wait_open()
            return
        # Gate, buckets, gate again: a worker that got its tokens while a cool-down began (a 429
        # came back meanwhile) goes round again rather than waiting at the gate with them. Held
        # there, every worker of the lane would collect tokens during a long cool-down and all
        # would leave together the moment it ends: a burst that earns a 429 per request.
        while True:
            await self.wait_open()
            if self._requests is not None:
                await self._requests.acquire()
            if self._tokens is not None:
                await self._tokens.acquire(min(estimate_tokens(request), self._tokens.max_rate))
            if self._open_at <= time.monotonic():
                return

    async def wait_open(self) -> None:
        # A loop, not one sleep: another 429 may push the gate further while we wait.
        while (delay := self._open_at - time.monotonic()) > 0:
            await anyio.sleep(delay)

    def cool_down(self, seconds: float) -> None:
        """Close the gate for ``seconds`` from now (never shortens a longer cool-down)."""
        self._open_at = max(self._open_at, time.monotonic() + seconds)

    def cooling_for(self) -> float:
        """Seconds left in the current cool-down (0 when the gate is open)."""
        return max(0.0, self._open_at - time.monotonic())
