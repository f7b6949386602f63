"""Generation for the local provider (:mod:`contam.providers.local`): blocking, for a worker thread.

One call of :func:`generate_blocking` answers several requests in one ``model.generate``: every
request's prompt, tokenised alone with the model's chat template, is repeated once per sample it
asks for (what ``num_return_sequences`` does), and the rows are left-padded into one batch with an
attention mask. So a probe's N samples of one prompt, and the prompts of several requests, share
each forward pass.

Sampling is done here, not by transformers: a logits processor draws each sampled row's next token
with that row's own ``torch.Generator``, seeded from the model's ``seed``, the prompt and the
sample's number, and hands greedy decoding a one-hot choice. A sample's text thus depends on the
seed, its prompt and its number only, not on which other requests share its batch or how a probe
split its samples into requests (up to the float rounding of a different batch shape, which may
tip a near tie). Greedy rows (temperature 0) take the argmax as before.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import anyio.from_thread

from contam.providers.base import Reply, Request

__all__ = ["LoadedModel", "Limits", "Sampling", "Job", "generate_blocking", "torch_threads",
           "stopping_criteria", "chat_inputs"]


@dataclass(frozen=True)
class LoadedModel:
    """A model in memory with what generation reads off its vocabulary once."""

    model: Any
    tokenizer: Any
    device: str
    served_model: str
    stop_token_ids: frozenset[int]
    sentence_end_ids: frozenset[int]  # tokens whose text ends a sentence: . ! ?
    word_start_ids: frozenset[int]  # tokens whose text begins with white space
    load_seconds: float

    @property
    def pad_token_id(self) -> int:
        return self.tokenizer.pad_token_id or min(self.stop_token_ids)


@dataclass(frozen=True)
class Limits:
    """How long one answer may grow and how many cores make it. Requests batched together share
    their limits (the batcher groups by them)."""

    max_new_tokens: int
    max_sentences: int
    threads: int


@dataclass(frozen=True)
class Sampling:
    """How a request's tokens are chosen: temperature 0 is greedy; else softmax(logits / t),
    cut to the smallest set of tokens holding ``top_p`` of the probability."""

    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0


@dataclass(frozen=True)
class Job:
    """One request as the batch sees it."""

    request: Request
    sampling: Sampling

    def sample_numbers(self) -> tuple[int, ...]:
        return self.request.sample_numbers or tuple(range(self.request.samples))


def row_seed(seed: int, request: Request, number: int) -> int:
    """The generator seed of one sample: the same seed, prompt and sample number give the same
    sample, and different numbers of one prompt are independent draws."""
    text = f"{seed}\x00{request.system}\x00{request.user}\x00{number}"
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") >> 1


# -- the prompt ----------------------------------------------------------------------------------

def chat_inputs(tokenizer: Any, request: Request) -> list[int]:
    """The model's own chat template over our system prompt and the one user message (R1)."""
    from jinja2.exceptions import TemplateError

    messages = [{"role": "user", "content": request.user}]
    if request.system:
        messages.insert(0, {"role": "system", "content": request.system})
    try:
        return _apply_template(tokenizer, messages)
    except TemplateError:
        # Some templates (older Gemma, Mistral) refuse a system role; prepend it to the question.
        merged = f"{request.system}\n\n{request.user}" if request.system else request.user
        return _apply_template(tokenizer, [{"role": "user", "content": merged}])


def _apply_template(tokenizer: Any, messages: list[dict[str, str]]) -> list[int]:
    encoded = tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                            return_tensors="pt", return_dict=True)
    return encoded["input_ids"][0].tolist()


def _left_padded(rows: Sequence[list[int]], pad: int, device: str) -> dict[str, Any]:
    """The rows as one batch, padded on the left (generation appends on the right), with the
    attention mask that hides the padding."""
    import torch

    width = max(len(row) for row in rows)
    ids = [[pad] * (width - len(row)) + row for row in rows]
    mask = [[0] * (width - len(row)) + [1] * len(row) for row in rows]
    return {"input_ids": torch.tensor(ids, device=device),
            "attention_mask": torch.tensor(mask, device=device)}


# -- choosing tokens and stopping ----------------------------------------------------------------

def _sampler(rows: Sequence[tuple[Sampling, int]], device: str) -> Any:
    """A logits processor that draws the next token of every sampled row with its own generator
    and leaves greedy rows' logits as they are; ``rows`` holds (sampling, seed) per row."""
    import torch
    from transformers import LogitsProcessor

    generators = {i: torch.Generator(device=device).manual_seed(seed)
                  for i, (sampling, seed) in enumerate(rows) if sampling.temperature > 0}

    class SeededSampler(LogitsProcessor):
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            if not generators:
                return scores
            chosen = scores.clone()
            for i, generator in generators.items():
                token = _draw(scores[i], rows[i][0], generator)
                chosen[i].fill_(float("-inf"))
                chosen[i, token] = 0.0
            return chosen

    return SeededSampler()


def _draw(logits: Any, sampling: Sampling, generator: Any) -> int:
    """One token from softmax(logits / temperature), within the top-p nucleus."""
    import torch

    probs = torch.softmax(logits.float() / sampling.temperature, dim=-1)
    if sampling.top_p < 1.0:
        ordered, order = probs.sort(descending=True)
        before = ordered.cumsum(-1) - ordered  # the mass of the tokens ranked above each
        ordered[before >= sampling.top_p] = 0.0  # the first token always stays
        probs = torch.zeros_like(probs).scatter_(-1, order, ordered)
    return int(torch.multinomial(probs, 1, generator=generator))


def stopping_criteria(loaded: LoadedModel, max_sentences: int, rows: int) -> tuple[Any, Any]:
    """Criteria that end generation at the next token once the caller is cancelled (a timeout,
    Ctrl-C: otherwise the worker thread would run on to ``max_new_tokens``) and end each row
    once it has ``max_sentences`` sentences (0: no cap). Returns the list and the sentence
    criterion, whose ``cut`` says per row how many generated tokens to keep (None: no cap hit)."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class HostCancelled(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            anyio.from_thread.check_cancelled()  # raises the cancellation into this thread
            return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

    class EnoughSentences(StoppingCriteria):
        """A sentence has ended when a token ending in . ! ? is followed by one starting a new
        word (so "3.5" and "Jr.," do not count); that next token is dropped from the answer."""

        def __init__(self) -> None:
            self.sentences, self.cut = [0] * rows, [None] * rows
            self.ended = [False] * rows  # a stop token came: the row only pads from here
            self.steps = 0

        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            self.steps += 1
            for row, (previous, last) in enumerate(input_ids[:, -2:].tolist()):
                self._look(row, previous, last)
            return torch.tensor([cut is not None for cut in self.cut], dtype=torch.bool,
                                device=input_ids.device)

        def _look(self, row: int, previous: int, last: int) -> None:
            if self.ended[row] or self.cut[row] is not None:
                return
            self.ended[row] = last in loaded.stop_token_ids
            if previous in loaded.sentence_end_ids and last in loaded.word_start_ids:
                self.sentences[row] += 1
            if 0 < max_sentences <= self.sentences[row]:
                self.cut[row] = self.steps - 1

        @property
        def fired(self) -> bool:  # the one-row view the tests read
            return self.cut[0] is not None

    sentences = EnoughSentences()
    return StoppingCriteriaList([HostCancelled(), sentences]), sentences


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """torch's intra-op thread count for one generation, restored afterwards (it is process-wide,
    and BERTScore later in the same process wants every core)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# -- generating ----------------------------------------------------------------------------------

def generate_blocking(loaded: LoadedModel, jobs: Sequence[Job], limits: Limits) -> list[Reply]:
    """Every job's reply, from one ``generate`` over all their rows. Blocking."""
    import torch
    from transformers import GenerationConfig, LogitsProcessorList

    prompts = [chat_inputs(loaded.tokenizer, job.request) for job in jobs]
    rows = [(prompt, job.sampling, row_seed(job.sampling.seed, job.request, number))
            for prompt, job in zip(prompts, jobs) for number in job.sample_numbers()]
    inputs = _left_padded([prompt for prompt, _, _ in rows], loaded.pad_token_id, loaded.device)
    config = GenerationConfig(do_sample=False, max_new_tokens=limits.max_new_tokens,
                              eos_token_id=sorted(loaded.stop_token_ids),
                              pad_token_id=loaded.pad_token_id)
    criteria, sentences = stopping_criteria(loaded, limits.max_sentences, len(rows))
    sampler = _sampler([(sampling, seed) for _, sampling, seed in rows], loaded.device)
    with torch.inference_mode(), torch_threads(limits.threads):
        output = loaded.model.generate(**inputs, generation_config=config,
                                       stopping_criteria=criteria,
                                       logits_processor=LogitsProcessorList([sampler]))
    generated = output[:, inputs["input_ids"].shape[1]:].tolist()
    answers = [_answer(loaded, tokens, cut, limits)
               for tokens, cut in zip(generated, sentences.cut)]
    return _replies(loaded, jobs, prompts, answers)


def _answer(loaded: LoadedModel, tokens: list[int], cut: int | None,
            limits: Limits) -> tuple[list[int], str]:
    """A row's own tokens (through its stop token; before the token that began the sentence
    too many) and its finish reason."""
    if cut is not None:
        return tokens[:cut], "stop"
    for index, token in enumerate(tokens):
        if token in loaded.stop_token_ids:
            return tokens[:index + 1], "stop"
    return tokens, "length" if len(tokens) >= limits.max_new_tokens else "stop"


def _replies(loaded: LoadedModel, jobs: Sequence[Job], prompts: Sequence[list[int]],
             answers: Sequence[tuple[list[int], str]]) -> list[Reply]:
    """One reply per job, from its rows' answers in order."""
    replies, start = [], 0
    for job, prompt in zip(jobs, prompts):
        own = answers[start:start + len(job.sample_numbers())]
        start += len(own)
        completions = [(loaded.tokenizer.decode(tokens, skip_special_tokens=True), reason)
                       for tokens, reason in own]
        replies.append(Reply.from_completions(
            completions, served_model=loaded.served_model, input_tokens=len(prompt),
            output_tokens=sum(len(tokens) for tokens, _ in own), http_status=None))
    return replies
