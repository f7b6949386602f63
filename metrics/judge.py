"""The LLM judge's rubric request and its label parser: pure, no store and no engine.

R1 holds by construction: :func:`judge_request` takes the rubric, one reference and one answer
and nothing else; it cannot see an item id, another row, another model's answer or any
statistic. The judge *run* (cells, resume, the engine) is :mod:`contam.harness.jobs.judge`.

- A reply must be exactly one of the rubric's labels once whitespace, case and trailing
  punctuation are ignored. Anything else is :class:`MalformedLabel`: a retryable error, recorded
  and asked again, never guessed.
- The reply is capped at 16 output tokens, plenty for a bare label; a reasoning model's larger
  cap goes in ``[judge].params``, which takes precedence.
- A study's own rubric (``[judge] rubric``) replaces the paper's text; the labels stay the three
  above, so a rubric must name each of them (:func:`missing_labels`).
"""

from __future__ import annotations

import re
from importlib import resources

from contam.harness.labels import JUDGE_REPLIES
from contam.harness.text import sha256_text
from contam.providers.base import Request, Transient

__all__ = ["JUDGE_RUBRIC", "MalformedLabel", "judge_request", "parse_label",
           "rubric_sha256", "missing_labels"]

JUDGE_RUBRIC = resources.files("contam.metrics").joinpath("judge_rubric.txt").read_text(encoding="utf-8")

# Only these may trail a bare label. Not "?": "right?" is a doubt, not a label.
_TRAILING_PUNCTUATION = ".!,;:"
_SHOWN_CHARS = 200  # of a malformed reply, kept in attempts.error


def judge_request(reference: str, answer: str, *, max_output_tokens: int | None = 16,
                  rubric: str = JUDGE_RUBRIC) -> Request:
    return Request(system=rubric,
                   user=f"Reference answer: {reference}\nAnswer to grade: {answer}",
                   max_output_tokens=max_output_tokens)


def rubric_sha256(rubric: str = JUDGE_RUBRIC) -> str:
    return sha256_text(rubric)


# Each label as a whole phrase; "right" on its own, not as the end of "partially right".
_LABEL_PATTERNS = {"right": r"(?<!partially )\bright\b", "partially right": r"\bpartially right\b",
                   "wrong": r"\bwrong\b"}


def missing_labels(rubric: str) -> list[str]:
    """The judge's labels a rubric never names (case-insensitive), in the order right, partially
    right, wrong: the judge can only answer with labels it was told of."""
    text = " ".join(rubric.split()).lower()
    return [label for label, pattern in _LABEL_PATTERNS.items() if not re.search(pattern, text)]


class MalformedLabel(Transient):
    """The judge's reply is not exactly one label: recorded and asked again, never guessed."""

    outcome = "malformed"


def parse_label(text: str | None) -> str:
    """The label (``right`` / ``partial`` / ``wrong``) of a bare reply, else MalformedLabel."""
    bare = " ".join((text or "").split()).lower().rstrip(_TRAILING_PUNCTUATION).rstrip()
    try:
        return JUDGE_REPLIES[bare]
    except KeyError:
        shown = (text or "")[:_SHOWN_CHARS] + ("..." if len(text or "") > _SHOWN_CHARS else "")
        raise MalformedLabel("malformed judge reply (not exactly one of right, partially right, "
                             f"wrong): {shown!r}") from None
