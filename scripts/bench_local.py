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

The floor: one plain ``model.generate`` over the same prompts (the model's chat template, left
padding, greedy, or sampled with ``num_return_sequences``), batched, in the same process with the
same torch threads and the same weights (the provider's converted copy, loaded again), as a
careful transformers user would write it. The provider's tokens per second over the floor's is
the ratio to watch (target >= 0.9x): what the batcher, the seeded per-row sampler and the stopping
criteria cost. Min-K% texts (each question's title, question and reference) are scored one at a
time, then all at once (the provider batches them), against the floor of one plain padded forward
pass per batch of the same texts.
"""

from __future__ import annotations

import csv
import os
import sys
import time
from importlib import resources

import anyio

from contam.harness.config import ModelSpec
from contam.harness.prompts import DEFAULT_SYSTEM_PROMPT, question_request
from contam.providers.base import Reply, Request
from contam.providers.local import DEFAULT_LOCAL_MODEL, LocalProvider, transformers_folder
from contam.providers.local_batch import SCORING_ROWS
from contam.providers.local_generate import torch_threads


def provider(max_new_tokens: int, batch_size: int) -> LocalProvider:
    spec = ModelSpec(name="local", provider="local", model=DEFAULT_LOCAL_MODEL, timeout_s=3600,
                     params={"max_new_tokens": max_new_tokens, "max_sentences": 0,
                             "batch_size": batch_size})
    return LocalProvider(spec)


def demo_rows(count: int) -> list[dict[str, str]]:
    path = resources.files("contam.harness").joinpath("data/demo_items.csv")
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))[:count]


def questions(count: int) -> list[Request]:
    return [question_request(DEFAULT_SYSTEM_PROMPT, row["title"], row["question"])
            for row in demo_rows(count)]


def min_k_texts(count: int) -> list[str]:
    return [f"{row['title']}\n{row['question']}\n{row['reference']}" for row in demo_rows(count)]


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


class Floor:
    """The plain transformers user's way: the same weights, tokenizer and threads, no harness."""

    def __init__(self, threads: int) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder = transformers_folder(DEFAULT_LOCAL_MODEL)
        self.tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        self.tokenizer.padding_side = "left"
        self.model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True).eval()
        self.threads = threads

    def generate(self, requests: list[Request], max_new_tokens: int, samples: int = 1) -> tuple[int, float]:
        """(tokens generated, seconds) of one batched ``generate``; a row's tokens end at its
        first end-of-sequence token, which counts (as the provider counts its stop token)."""
        import torch

        chats = [self.tokenizer.apply_chat_template(
            [{"role": "system", "content": r.system}, {"role": "user", "content": r.user}],
            add_generation_prompt=True, tokenize=False) for r in requests]
        inputs = self.tokenizer(chats, return_tensors="pt", padding=True, add_special_tokens=False)
        sampling = {"do_sample": True, "temperature": 1.0, "top_p": 1.0, "top_k": 0,
                    "num_return_sequences": samples} if samples > 1 else {"do_sample": False}
        started = time.perf_counter()
        with torch.inference_mode(), torch_threads(self.threads):
            output = self.model.generate(**inputs, max_new_tokens=max_new_tokens,
                                         pad_token_id=self.tokenizer.pad_token_id, **sampling)
        seconds = time.perf_counter() - started
        eos = self.tokenizer.eos_token_id
        rows = output[:, inputs["input_ids"].shape[1]:].tolist()
        return sum(row.index(eos) + 1 if eos in row else len(row) for row in rows), seconds

    def score(self, texts: list[str]) -> tuple[int, float]:
        """(texts, seconds) of plain padded forward passes, SCORING_ROWS texts a pass."""
        import torch

        self.tokenizer.padding_side = "right"
        started = time.perf_counter()
        with torch.inference_mode(), torch_threads(self.threads):
            for start in range(0, len(texts), SCORING_ROWS):
                batch = self.tokenizer(texts[start:start + SCORING_ROWS], return_tensors="pt",
                                       padding=True)
                logits = self.model(**batch).logits
                torch.log_softmax(logits.float(), dim=-1)
        self.tokenizer.padding_side = "left"
        return len(texts), time.perf_counter() - started


def floor_line(label: str, tokens: int, seconds: float, harness_rate: float) -> None:
    rate = tokens / seconds
    print(f"{label:<34} {tokens:>5} tokens in {seconds:6.1f} s: {rate:6.1f} tokens/s; "
          f"provider / floor = {harness_rate / rate:.2f}x")


def timed_scores(label: str, run, model: LocalProvider, texts: list[str]) -> float:
    started = time.perf_counter()
    anyio.run(run, model, texts)
    seconds = time.perf_counter() - started
    print(f"{label:<34} {len(texts):>4} texts in {seconds:6.1f} s: {len(texts) / seconds:6.2f} texts/s")
    return len(texts) / seconds


async def score_one_at_a_time(model: LocalProvider, texts: list[str]) -> None:
    for text in texts:
        await model.text_logprobs(text)


async def score_all_at_once(model: LocalProvider, texts: list[str]) -> None:
    async with anyio.create_task_group() as group:
        for text in texts:
            group.start_soon(model.text_logprobs, text)


def token_rate(run, model: LocalProvider, requests: list[Request]) -> float:
    started = time.perf_counter()
    replies = anyio.run(run, model, requests)
    return sum(reply.output_tokens or 0 for reply in replies) / (time.perf_counter() - started)


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
    floor = Floor(max(1, len(os.sched_getaffinity(0)) // 2))  # the provider's default threads
    greedy = token_rate(all_at_once, batched, asked)  # again, beside the floor: the load drifts
    floor_line("floor: greedy, one generate", *floor.generate(asked, max_new_tokens), greedy)
    drawn = token_rate(all_at_once, batched, [sampled(q, samples) for q in asked])
    floor_line("floor: sampled, one generate", *floor.generate(asked, max_new_tokens, samples), drawn)
    texts = min_k_texts(prompts * samples)
    before = timed_scores("min-k, one text at a time", score_one_at_a_time, batched, texts)
    after = timed_scores("min-k, all at once (batched)", score_all_at_once, batched, texts)
    count, seconds = floor.score(texts)
    print(f"min-k: batched / one at a time = {after / before:.2f}x; provider / floor "
          f"({count / seconds:.2f} texts/s) = {after / (count / seconds):.2f}x")


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:4]))
