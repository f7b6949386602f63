"""The common shapes of a contamination probe, pure (no store, no engine). Two ways to run:

* :class:`GenerationProbe` (cdd, ts-guess, guided) asks for completions: the job sends each
  :class:`ProbePrompt` through the lanes of ``contam run``, stores every completion as a
  ``probe_samples`` row, then each :class:`ProbeScore` as a ``probe_scores`` row;
* :class:`TextProbe` (min-k) scores each item's text by the model's token log-probabilities.

Both key their rows by :func:`params_sha256` of the probe's parameters. What the study lends a
probe (its prompt, its name) is a :class:`ProbeContext`; a TextProbe is given the study's text rule
(``[probes] text``) by the job, once checked against the items' columns."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["ProbeItem", "ProbePrompt", "ProbeScore", "ProbeContext", "GenerationProbe",
           "TextProbe", "params_sha256", "DEFAULT_DATASET", "DEFAULT_SPLIT"]

# What the guided probe's instruction names by default (a fixed label: renaming a file must not
# change a probe's parameters); here so that the command line reads it without the probe.
DEFAULT_DATASET, DEFAULT_SPLIT = "contam", "test"


@dataclass(frozen=True, kw_only=True)
class ProbeItem:
    """One item as a probe sees it (the store's latest_items row)."""

    item_id: str
    title: str
    subset: str
    question: str
    reference: str
    fields: Mapping[str, Any] = field(default_factory=dict)  # the item's extra columns

    @property
    def values(self) -> dict[str, Any]:
        """The item's own columns by name, extras included: what a study's template fills from."""
        return {**self.fields, "title": self.title, "subset": self.subset,
                "question": self.question, "reference": self.reference}


@dataclass(frozen=True, kw_only=True)
class ProbePrompt:
    """One request of a probe: ``samples`` completions of the same prompt (one request where the
    API has a multi-sample field), stored as rows (variant, 0..samples-1)."""

    variant: str  # e.g. "greedy", "sample", "guided", "general", "masked"
    system: str
    user: str
    samples: int = 1
    temperature: float | None = None  # None: the model's configured params
    max_output_tokens: int | None = None


@dataclass(frozen=True, kw_only=True)
class ProbeScore:
    """What a probe made of one (item, model) cell: a ``probe_scores`` row."""

    metric: str
    value: float | None
    detail: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ProbeContext:
    """What a probe may take from the study: the prompt ``contam run`` asks with, and its name."""

    system_prompt: str
    question_template: str  # "Game: {title}\nQuestion: {question}", or the study's [prompt] user
    own_template: bool = False  # the study's own template, not the paper's
    study_name: str | None = None  # [study] name: what guided's instruction names by default


class GenerationProbe(Protocol):
    """A probe that asks for completions and scores them."""

    kind: str  # cdd | ts-guess | guided

    def params(self) -> dict[str, Any]:
        """Everything that changes what is asked or how it is scored; recorded and hashed."""
        ...

    def prompts(self, item: ProbeItem) -> Sequence[ProbePrompt]: ...

    def score(self, item: ProbeItem, texts: Mapping[str, Sequence[str]]) -> Sequence[ProbeScore]:
        """``texts``: each variant's completions in sample order (normalised answer text)."""
        ...


class TextProbe(Protocol):
    """A probe that scores each item's own text by a model's token log-probabilities (min-k):
    one text per (item, model), scored in one step, no completion asked."""

    kind: str
    metric: str  # the score whose row marks an (item, model) as done (resume)

    def params(self, source: str, rule: str | None) -> dict[str, Any]:
        """The parameters of one model's rows: ``source`` says where its log-probabilities come
        from (``Provider.text_logprobs_source``), ``rule`` the study's checked text rule."""
        ...

    def text(self, item: ProbeItem, rule: str | None) -> str: ...

    def scores(self, scored: Any) -> Sequence[ProbeScore]:
        """``scored``: the provider's ``TextLogprobs`` of :meth:`text`."""
        ...


def params_sha256(kind: str, params: Mapping[str, Any]) -> str:
    """The key a probe's rows carry: the kind and its parameters, canonical JSON."""
    import orjson  # here, not at the top: the command line imports this module to build its parser

    canonical = orjson.dumps({"probe": kind, "params": params}, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()
