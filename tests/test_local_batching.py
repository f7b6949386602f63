"""The local provider batches: requests made while the model is busy share one ``generate`` (left
padding, an attention mask), each request's samples are rows of it, and what comes back equals
what each request gets alone (greedy exactly; sampled too, each sample having its own
generator). On the tiny random Llama (tests.tiny_lm), and (slow) on the packaged SmolLM2."""

from __future__ import annotations

import csv
import time
from importlib import resources

import anyio
import pytest

from contam.harness.config import ModelSpec
from contam.harness.prompts import DEFAULT_SYSTEM_PROMPT, question_request
from contam.providers.base import Request, Timeout
from contam.providers.local import DEFAULT_LOCAL_MODEL, LocalProvider
from tests.tiny_lm import tiny_model_folder

WORDS = ["misty", "what badge does brock award ?", "pallet town", "who is the gym leader in cerulean city ?",
         "red", "tm34 bide"]


@pytest.fixture(scope="module")
def tiny_chat(tmp_path_factory):
    return tiny_model_folder(tmp_path_factory.mktemp("tiny") / "tiny-chat", chat=True)


def local(model: str, **params) -> LocalProvider:
    return LocalProvider(ModelSpec(name="m", provider="local", model=model,
                                   params={"device": "cpu", **params}))


@pytest.fixture
def batches(monkeypatch):
    """The rows of every ``generate`` the provider ran, one list per call."""
    import contam.providers.local as local_module

    seen: list[list[int]] = []
    real = local_module.generate_blocking

    def counting(loaded, jobs, limits):
        seen.append([len(job.sample_numbers()) for job in jobs])
        return real(loaded, jobs, limits)

    monkeypatch.setattr(local_module, "generate_blocking", counting)
    return seen


async def together(provider: LocalProvider, requests: list[Request]) -> list:
    """Every request at once, as a lane's workers send them."""
    replies: list = [None] * len(requests)

    async def ask(index: int) -> None:
        replies[index] = await provider.generate(requests[index])

    async with anyio.create_task_group() as group:
        for index in range(len(requests)):
            group.start_soon(ask, index)
    return replies


def alone(provider: LocalProvider, requests: list[Request]) -> list:
    return [anyio.run(provider.generate, request) for request in requests]


def greedy_requests(max_tokens: int = 12) -> list[Request]:
    return [Request(system="be brief .", user=words, max_output_tokens=max_tokens) for words in WORDS]


def test_concurrent_greedy_requests_share_a_forward_pass_and_answer_as_alone(tiny_chat, batches):
    provider = local(str(tiny_chat), max_sentences=0)
    batched = anyio.run(together, provider, greedy_requests())
    assert len(batches) < len(WORDS) and max(len(rows) for rows in batches) > 1
    batches.clear()
    single = alone(provider, greedy_requests())
    assert batches == [[1]] * len(WORDS)
    assert batched == single
    assert len({reply.input_tokens for reply in single}) > 1  # prompts of different lengths: padded


def test_sampled_requests_batched_equal_each_alone(tiny_chat, batches):
    provider = local(str(tiny_chat), max_sentences=0)
    requests = [Request(system="x", user=words, max_output_tokens=8, temperature=1.0, samples=3)
                for words in WORDS]
    batched = anyio.run(together, provider, requests)
    assert any(sum(rows) > 3 for rows in batches)
    assert [r.texts for r in batched] == [r.texts for r in alone(provider, requests)]


def test_the_sentence_cap_cuts_each_row_of_a_batch_at_its_own_sentence():
    """Toy vocabulary: 0 = a stop token, 1 = "Brock.", 2 = " He", 3 = "3.", 4 = "5", 7 = "x"."""
    import torch

    from contam.providers.local_generate import LoadedModel, stopping_criteria

    loaded = LoadedModel(model=None, tokenizer=None, device="cpu", served_model="x",
                         stop_token_ids=frozenset({0}), sentence_end_ids=frozenset({1, 3}),
                         word_start_ids=frozenset({2}), load_seconds=0.0)
    criterion = stopping_criteria(loaded, 1, rows=3)[1]
    generated = [[1, 2, 7, 7], [3, 4, 1, 2], [0, 1, 2, 7]]  # a sentence, "3.5" then one, a stop
    done = [criterion(torch.tensor([[9] + row[:step] for row in generated]), None).tolist()
            for step in range(1, 5)]
    assert done == [[False] * 3, [True, False, False], [True, False, False], [True, True, False]]
    assert criterion.cut == [1, 3, None]  # keep "Brock." and "3.5 Brock."; the stopped row ends at 0


def test_a_batch_holds_at_most_batch_size_rows_and_one_set_of_limits(tiny_chat, batches):
    provider = local(str(tiny_chat), batch_size=4)
    requests = [Request(system="x", user=w, max_output_tokens=t, temperature=1.0, samples=2)
                for w in WORDS for t in (5, 6)]
    anyio.run(together, provider, requests)
    assert sum(sum(rows) for rows in batches) == 2 * len(requests)
    assert all(sum(rows) <= 4 for rows in batches)
    oversized = Request(system="x", user="red", temperature=1.0, samples=9)
    batches.clear()
    assert len(anyio.run(provider.generate, oversized).texts) == 9 and batches == [[9]]


def test_a_cancelled_caller_leaves_the_others_of_its_batch_answered(tiny_chat, monkeypatch):
    import contam.providers.local as local_module

    real = local_module.generate_blocking

    def slow(loaded, jobs, limits):
        time.sleep(0.2)
        return real(loaded, jobs, limits)

    monkeypatch.setattr(local_module, "generate_blocking", slow)
    provider = local(str(tiny_chat), max_sentences=0)
    requests = greedy_requests()[:3]

    async def cancel_the_first() -> list:
        replies: list = [None] * 3

        async def ask(index: int) -> None:
            replies[index] = await provider.generate(requests[index])

        async with anyio.create_task_group() as group:
            with anyio.CancelScope() as first:
                group.start_soon(ask, 1)
                group.start_soon(ask, 2)
                await anyio.sleep(0.05)  # the first request is in the model, the others wait
                first.cancel()
                await ask(0)
        return replies

    replies = anyio.run(cancel_the_first)
    assert replies[0] is None
    assert replies[1:] == alone(provider, requests[1:])


def test_a_batch_past_its_time_limit_fails_each_of_its_requests_with_timeout(tiny_chat):
    provider = LocalProvider(ModelSpec(name="m", provider="local", model=str(tiny_chat), timeout_s=0.001,
                                       params={"device": "cpu", "max_new_tokens": 2000,
                                               "max_sentences": 0}))
    requests = [Request(system="x", user=w, temperature=1.0, samples=2) for w in WORDS[:3]]

    async def outcomes() -> list:
        found: list = []

        async def ask(request: Request) -> None:
            try:
                await provider.generate(request)
            except Timeout as exc:
                found.append(exc)

        async with anyio.create_task_group() as group:
            for request in requests:
                group.start_soon(ask, request)
        return found

    timeouts = anyio.run(outcomes)
    assert len(timeouts) == 3 and all("no answer within" in str(e) for e in timeouts)
    assert len({id(e) for e in timeouts}) == 3  # each request its own exception


# -- the packaged model: slow --------------------------------------------------------------------

def demo_questions(count: int) -> list[Request]:
    path = resources.files("contam.harness").joinpath("data/demo_items.csv")
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))[:count]
    return [question_request(DEFAULT_SYSTEM_PROMPT, row["title"], row["question"]) for row in rows]


@pytest.mark.slow
def test_smollm2_greedy_answers_batched_equal_the_unbatched_ones(batches):
    provider = local(DEFAULT_LOCAL_MODEL, max_new_tokens=24)
    requests = demo_questions(6)
    batched = anyio.run(together, provider, requests)
    assert max(len(rows) for rows in batches) > 1
    assert [r.text for r in batched] == [r.text for r in alone(provider, requests)]
    assert all(r.text.strip() for r in batched)
