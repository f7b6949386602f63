"""``guided``: guided vs general instruction (Golchin & Surdeanu 2023, arXiv 2308.08493).

Design notes: ARCHITECTURE.md, Probe: guided.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rapidfuzz.distance import LCSseq

from contam.metrics.bleu import bleu2_many, tokenize
from contam.metrics.probes import (
    DEFAULT_DATASET, DEFAULT_SPLIT, ProbeContext, ProbeItem, ProbePrompt, ProbeScore,
)

__all__ = ["build", "GuidedProbe", "split_question", "rouge_l", "guided_prompt", "general_prompt",
           "GUIDED_TEMPLATE", "GENERAL_TEMPLATE", "DEFAULT_DATASET", "DEFAULT_SPLIT", "METRICS",
           "NOT_SPLITTABLE"]

NOT_SPLITTABLE = "not probed: the question has too few words to split into two pieces"
GUIDED_TEMPLATE = """INSTRUCTION:
You are provided with the FIRST PIECE of an instance from the {split} split of the {dataset} dataset.
Finish the SECOND PIECE of the instance as EXACTLY appeared in the dataset.
ONLY rely on the original form of the instance in the dataset to finish the SECOND PIECE.

GAME: {title}
ANSWER: {answer}

FIRST PIECE:
{first_piece}

SECOND PIECE:"""
GENERAL_TEMPLATE = """INSTRUCTION:
Finish the SECOND PIECE based on the FIRST PIECE, such that these two pieces become a single question with the following ANSWER.

GAME: {title}
ANSWER: {answer}

FIRST PIECE:
{first_piece}

SECOND PIECE:"""
SPLIT_RULE = "whitespace words; first piece = first floor(n/2), rest = the others"
# The probe_scores metrics of one item, in order.
METRICS = ("rouge_l_guided", "rouge_l_general", "rouge_l_diff",
           "bleu2_guided", "bleu2_general", "bleu2_diff")
_LABEL = re.compile(r"\A\s*second piece\s*:\s*", re.IGNORECASE)


def split_question(question: str) -> tuple[str, str] | None:
    """(first piece, true rest) by :data:`SPLIT_RULE`, or None when one of them has no word."""
    words = question.split()
    first, rest = " ".join(words[:len(words) // 2]), " ".join(words[len(words) // 2:])
    return (first, rest) if tokenize(first) and tokenize(rest) else None


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F-measure (beta = 1) of ``candidate`` against ``reference`` over BLEU-2's tokens;
    0.0 when either has no token."""
    produced, wanted = tokenize(candidate), tokenize(reference)
    common = LCSseq.similarity(produced, wanted) if produced and wanted else 0
    if not common:
        return 0.0
    precision, recall = common / len(produced), common / len(wanted)
    return 2 * precision * recall / (precision + recall)


def guided_prompt(item: ProbeItem, first_piece: str, *, dataset: str, split: str) -> str:
    return GUIDED_TEMPLATE.format(split=split, dataset=dataset, title=item.title,
                                  answer=item.reference, first_piece=first_piece)


def general_prompt(item: ProbeItem, first_piece: str) -> str:
    return GENERAL_TEMPLATE.format(title=item.title, answer=item.reference, first_piece=first_piece)


def _completion(texts: Mapping[str, Sequence[str]], variant: str) -> str:
    return _LABEL.sub("", (texts.get(variant) or [""])[0])


@dataclass(frozen=True, kw_only=True)
class GuidedProbe:
    """Two greedy requests per item (``guided``, ``general``); six scores per item."""

    kind: ClassVar[str] = "guided"
    dataset: str = DEFAULT_DATASET
    split: str = DEFAULT_SPLIT
    max_output_tokens: int = 64

    def __post_init__(self) -> None:
        if not self.dataset.strip() or not self.split.strip():
            raise ValueError("--dataset and --split must name something: they are what the "
                             "guided instruction says")
        if self.max_output_tokens < 1:
            raise ValueError(f"--max-output-tokens must be at least 1, not {self.max_output_tokens}")

    def params(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "split": self.split, "split_rule": SPLIT_RULE,
                "guided_template": GUIDED_TEMPLATE, "general_template": GENERAL_TEMPLATE,
                "rouge_l": "F-measure beta=1 over NFC lower \\w+ tokens, no stemming",
                "temperature": 0.0, "max_output_tokens": self.max_output_tokens}

    def prompts(self, item: ProbeItem) -> Sequence[ProbePrompt]:
        pieces = split_question(item.question)
        if pieces is None:
            return ()
        first = pieces[0]
        users = {"guided": guided_prompt(item, first, dataset=self.dataset, split=self.split),
                 "general": general_prompt(item, first)}
        return tuple(ProbePrompt(variant=variant, system="", user=user, temperature=0.0,
                                 max_output_tokens=self.max_output_tokens)
                     for variant, user in users.items())

    def score(self, item: ProbeItem, texts: Mapping[str, Sequence[str]]) -> Sequence[ProbeScore]:
        pieces = split_question(item.question)
        if pieces is None:
            return tuple(ProbeScore(metric=m, value=None, detail={"reason": NOT_SPLITTABLE})
                         for m in METRICS)
        rest = pieces[1]
        guided, general = _completion(texts, "guided"), _completion(texts, "general")
        # a blank completion scores BLEU-2 0 (it reproduced nothing) rather than NULL
        pairs = {"rouge_l": (rouge_l(guided, rest), rouge_l(general, rest)),
                 "bleu2": tuple(v or 0.0 for v in bleu2_many([(guided, rest), (general, rest)]))}
        values = {}
        for name, (with_name, without) in pairs.items():
            values.update({f"{name}_guided": with_name, f"{name}_general": without,
                           f"{name}_diff": with_name - without})
        detail = {"rest": rest, "first_piece_words": len(pieces[0].split())}
        return tuple(ProbeScore(metric=m, value=values[m], detail=detail) for m in METRICS)


def build(context: ProbeContext, *, dataset: str | None = None, **options: Any) -> GuidedProbe:
    """The registry's builder: guided asks its own instructions (the paper's), which name the
    study's ``[study] name`` unless ``--dataset`` says otherwise."""
    return GuidedProbe(dataset=dataset or context.study_name or DEFAULT_DATASET, **options)
