"""The local provider's load time and generation speed on the bundled demo questions.

    python scripts/bench_local.py [N_QUESTIONS] [MAX_NEW_TOKENS]

Prints the load time (the first load in a fresh $CONTAM_CACHE_DIR de-quantises the GGUF; later
ones read the converted copy) and tokens per second over the first N demo questions.
"""

from __future__ import annotations

import csv
import sys
import time
from importlib import resources

import anyio

from harness.config import ModelSpec
from harness.prompts import DEFAULT_SYSTEM_PROMPT, question_request
from providers.local import DEFAULT_LOCAL_MODEL, LocalProvider


def main(questions: int = 6, max_new_tokens: int = 64) -> None:
    spec = ModelSpec(name="local", provider="local", model=DEFAULT_LOCAL_MODEL,
                     params={"max_new_tokens": max_new_tokens})
    provider = LocalProvider(spec)
    print(anyio.run(provider.preflight))
    path = resources.files("harness").joinpath("data/demo_items.csv")
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))[:questions]
    tokens, started = 0, time.perf_counter()
    for row in rows:
        request = question_request(DEFAULT_SYSTEM_PROMPT, row["title"], row["question"])
        tokens += anyio.run(provider.generate, request).output_tokens
    seconds = time.perf_counter() - started
    print(f"{len(rows)} answers, {tokens} tokens in {seconds:.1f} s: {tokens / seconds:.1f} tokens/s, "
          f"{seconds / len(rows):.2f} s an answer")


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:3]))
