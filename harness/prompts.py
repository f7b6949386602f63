"""The prompt skeleton of the seed paper, byte-identical and hashed.

R1 holds by construction: :func:`question_request` takes a title and a question and nothing else;
it cannot see an item id, another row, another model's answer or any statistic. The judge's
rubric request is :func:`metrics.judge.judge_request`.
"""

from __future__ import annotations

from harness.config import DEFAULT_SYSTEM_PROMPT
from harness.text import sha256_text
from providers.base import Request

__all__ = ["DEFAULT_SYSTEM_PROMPT", "question_request", "prompt_sha256"]

# The user turn, written once: the request fills it and the run's prompt hash covers it.
USER_TEMPLATE = "Game: {title}\nQuestion: {question}"


def question_request(system: str, title: str, question: str, *,
                     max_output_tokens: int | None = None) -> Request:
    """Game and question verbatim from the item table, after the lookup prohibition."""
    return Request(system=system, user=USER_TEMPLATE.format(title=title, question=question),
                   max_output_tokens=max_output_tokens)


def prompt_sha256(system: str) -> str:
    """Hash of the exact skeleton a run used (system prompt + user template)."""
    return sha256_text(system + "\x00" + USER_TEMPLATE)
