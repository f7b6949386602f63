"""The prompt skeleton of the seed paper and the judge rubric, byte-identical and hashed.

R1 holds by construction: :func:`question_request` takes a title and a question and nothing else,
and :func:`judge_request` takes the rubric, one reference and one answer and nothing else. Neither
can see an item id, another row, another model's answer or any statistic.
"""

from __future__ import annotations

import hashlib
from importlib import resources

from providers.base import Request

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "JUDGE_RUBRIC",
    "JUDGE_LABELS",
    "question_request",
    "judge_request",
    "sha256_text",
    "prompt_sha256",
    "rubric_sha256",
]

DEFAULT_SYSTEM_PROMPT = (
    "Answer from memory only. Do not look anything up. Reply with a bare 1-2 sentence answer."
)

JUDGE_RUBRIC = resources.files("harness").joinpath("judge_rubric.txt").read_text(encoding="utf-8")

# The judge's replies map onto the labels table's values.
JUDGE_LABELS = {"right": "right", "partially right": "partial", "wrong": "wrong"}


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def question_request(system: str, title: str, question: str, *,
                     max_output_tokens: int | None = None) -> Request:
    """Game and question verbatim from the item table, after the lookup prohibition."""
    return Request(system=system, user=f"Game: {title}\nQuestion: {question}",
                   max_output_tokens=max_output_tokens)


def judge_request(reference: str, answer: str, *, max_output_tokens: int | None = 16) -> Request:
    return Request(system=JUDGE_RUBRIC,
                   user=f"Reference answer: {reference}\nAnswer to grade: {answer}",
                   max_output_tokens=max_output_tokens)


def prompt_sha256(system: str) -> str:
    """Hash of the exact skeleton a run used (system prompt + user template)."""
    return sha256_text(system + "\x00" + "Game: {title}\nQuestion: {question}")


def rubric_sha256() -> str:
    return sha256_text(JUDGE_RUBRIC)
