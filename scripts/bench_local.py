"""The local provider's load time, and its generation speed unbatched and batched.

    python scripts/bench_local.py [PROMPTS] [SAMPLES] [MAX_NEW_TOKENS]

Prints the load time (the first load in a fresh $CONTAM_CACHE_DIR de-quantises the GGUF; later
ones read the converted copy), then samples per second over the first PROMPTS demo questions,
each sampled SAMPLES times at temperature 1 (as cdd does), two ways:

* unbatched: one request per sample, one at a time, ``batch_size = 1``: one row per forward pass,
  as the provider worked before it batched;
* batched: one request per prompt carrying its SAMPLES samples, all prompts at once (as a lane's
  workers send them), so every row shares each forward pass.

And the same for greedy answers (``contam run``): PROMPTS questions one at a time, then at once.
Generation stops at MAX_NEW_TOKENS (no sentence cap), so both ways make comparable tokens.
"""

from __future__ import annotations

import csv
import sys
import time
from importlib import resources

import anyio

from harness.config import ModelSpec
from harness.prompts import DEFAULT_SYSTEM_PROMPT, question_request
from providers.base import Reply, Request
from providers.local import DEFAULT_LOCAL_MODEL, LocalProvider


def provider(max_new_tokens: int, batch_size: int) -> LocalProvider:
    spec = ModelSpec(name="local", provider="local", model=DEFAULT_LOCAL_MODEL, timeout_s=3600,
                     params={"max_new_tokens": max_new_tokens, "max_sentences": 0,
                             "batch_size": batch_size})
    return LocalProvider(spec)


def questions(count: int) -> list[Request]:
    path = resources.files("harness").joinpath("data/demo_items.csv")
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))[:count]
    return [question_request(DEFAULT_SYSTEM_PROMPT, row["title"], row["question"]) for row in rows]


def sampled(request: Request, samples: int, numbers: tuple[int, ...] = ()) -> Request:
    return Request(system=request.system, user=request.user, temperature=1.0, samples=samples,
                   sample_numbers=numbers)


async def one_at_a_time(model: LocalProvider, requests: list[Request]) -> list[Reply]:
    return [await model.generate(request) for request in requests]


async def all_at_once(model: LocalProvider, requests: list[Request]) -> list[Reply]:
    replies: list[Reply] = []
    async with anyio.create_task_group() as group:
        for request in requests:
            group.start_soon(lambda r=request: _append(model, r, replies))
    return replies


async def _append(model: LocalProvider, request: Request, replies: list[Reply]) -> None:
    replies.append(await model.generate(request))


def timed(label: str, run, model: LocalProvider, requests: list[Request]) -> float:
    started = time.perf_counter()
    replies = anyio.run(run, model, requests)
    seconds = time.perf_counter() - started
    samples = sum(len(reply.completions()) for reply in replies)
    tokens = sum(reply.output_tokens or 0 for reply in replies)
    rate = samples / seconds
    print(f"{label:<34} {samples:>4} samples, {tokens:>5} tokens in {seconds:6.1f} s: "
          f"{rate:6.2f} samples/s, {tokens / seconds:6.1f} tokens/s")
    return rate


def main(prompts: int = 4, samples: int = 5, max_new_tokens: int = 32) -> None:
    unbatched, batched = provider(max_new_tokens, 1), provider(max_new_tokens, 32)
    print(anyio.run(batched.preflight))
    asked = questions(prompts)
    per_sample = [sampled(q, 1, (n,)) for q in asked for n in range(samples)]
    before = timed("sampled, unbatched (1 row a pass)", one_at_a_time, unbatched, per_sample)
    after = timed("sampled, batched", all_at_once, batched, [sampled(q, samples) for q in asked])
    print(f"sampled: batched / unbatched = {after / before:.2f}x samples per second")
    before = timed("greedy, one at a time", one_at_a_time, unbatched, asked)
    after = timed("greedy, all at once (batched)", all_at_once, batched, asked)
    print(f"greedy: batched / unbatched = {after / before:.2f}x answers per second")


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:4]))
