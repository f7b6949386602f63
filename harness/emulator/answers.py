"""What the emulator answers a generate call with, answer by answer: the test's responder, the
knowledge's reply (:mod:`contam.harness.emulator.knowledge`), else the stand-in
(:func:`contam.harness.emulator.settings.sampled_reply`), each cut at the call's output limit. A call
asking for several answers (OpenAI ``n``, Gemini ``candidateCount``) gets that many, numbered as
samples of its prompt."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from contam.harness.emulator.apis import Call, Completion
from contam.harness.emulator.settings import EmulatorSettings, sampled_reply

__all__ = ["Answerer"]


class Answerer:
    """The answers of one emulator; it counts the samples drawn per sampled prompt."""

    def __init__(self, settings: EmulatorSettings) -> None:
        self.settings = settings
        self._drawn: Counter[tuple[Any, ...]] = Counter()

    def answers(self, call: Call) -> list[Completion]:
        """The call's answers (one when the emulator ignores n); a responder that fails raises
        (the server's 500)."""
        if self.settings.ignore_n:
            call = replace(call, samples=1)
        return [_cut(text, call.max_tokens) for text in self._texts(call, self._samples(call))]

    def _texts(self, call: Call, samples: range) -> list[str]:
        """An answer per sample number: the responder's, the knowledge's (deterministic in its
        seed, the item, the sample number, the temperature and the model answering, whose name
        gives it its skill), else the stand-in."""
        settings = self.settings
        if settings.responder:
            return [settings.responder(call.question) for _ in samples]
        if settings.knowledge is not None:
            return settings.knowledge.answers(call.system, call.question,
                                              temperature=call.temperature, samples=samples,
                                              model=settings.served_model or call.model)
        return [sampled_reply(call.system, call.question, temperature=call.temperature,
                              sample=sample) for sample in samples]

    def _samples(self, call: Call) -> range:
        """The sample numbers of a call's answers: a sampling call (temperature > 0) draws the
        next ones for its prompt, as a real model draws fresh samples for every request; any
        other call numbers its answers from 0."""
        if not call.temperature:
            return range(call.samples)
        key = (call.api, call.model, call.system, call.question, call.temperature)
        first = self._drawn[key]
        self._drawn[key] += call.samples
        return range(first, first + call.samples)


def _cut(text: str, max_tokens: int | None) -> Completion:
    """An answer cut at the call's output limit (a word counts as a token here)."""
    words = text.split()
    if max_tokens and len(words) > max_tokens:
        return Completion(" ".join(words[:max_tokens]), truncated=True)
    return Completion(text)
