"""The question prompt: the study's system prompt and user template, byte-identical and hashed.

Without ``[prompt] user`` the user turn is the seed paper's ``Game: {title}\\nQuestion: {question}``
and the hash is the paper's. A study's own template (:func:`study_prompt`) fills ``{column}``
fields from one item's own columns, extra ones included (:mod:`contam.metrics.template`).

R1 holds by construction: a request is filled from one item's values and nothing else; it cannot
see another row, another model's answer or any statistic, and a question template may not name the
item's ``reference`` (the answer) or ``item_id`` (an id may spell the answer or the stratum). The
judge's rubric request is :func:`contam.metrics.judge.judge_request`. See ARCHITECTURE.md, "A study's
settings".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contam.harness.config import DEFAULT_SYSTEM_PROMPT
from contam.harness.errors import UserError
from contam.harness.text import sha256_text
from contam.metrics.template import fill_template, template_fields, unknown_field_problem
from contam.providers.base import Request

__all__ = ["DEFAULT_SYSTEM_PROMPT", "USER_TEMPLATE", "QuestionPrompt", "study_prompt",
           "text_rule", "question_request", "prompt_sha256", "HIDDEN_FIELDS"]

# The paper's user turn, written once: the request fills it and the run's prompt hash covers it.
USER_TEMPLATE = "Game: {title}\nQuestion: {question}"
# Columns a question template may not show: the answer, and an id that may spell it.
HIDDEN_FIELDS = ("reference", "item_id")


@dataclass(frozen=True)
class QuestionPrompt:
    """The system prompt and the user template every question of a run is asked with."""

    system: str
    template: str = USER_TEMPLATE

    def request(self, values: Mapping[str, Any], *,
                max_output_tokens: int | None = None) -> Request:
        """One item's question: the template filled from that item's own values."""
        return Request(system=self.system, user=fill_template(self.template, values),
                       max_output_tokens=max_output_tokens)

    @property
    def sha256(self) -> str:
        return prompt_sha256(self.system, self.template)


def study_prompt(system: str, template: str | None, columns: Sequence[str],
                 where: str = "[prompt] user") -> QuestionPrompt:
    """The run's prompt: the paper's without ``template``; a template naming a column the items
    lack, the answer, or a malformed field is one UserError naming it and the columns present."""
    if template is None:
        return QuestionPrompt(system)
    try:
        names = template_fields(template)
    except ValueError as exc:
        raise UserError(f"{where}: {exc}") from None
    for name in names:
        if name in HIDDEN_FIELDS:
            raise UserError(f"{where}: field {{{name}}} may not be asked (R1: a question shows "
                            "neither its answer nor its item id)")
        if name not in columns:
            raise UserError(f"{where}: {unknown_field_problem(name, columns)}")
    return QuestionPrompt(system, template)


def text_rule(template: str | None, columns: Sequence[str],
              where: str = "[probes] text") -> str | None:
    """min-k's ``[probes] text`` template, checked like a question's; it scores a text and asks
    nothing, so it may name the ``reference``."""
    if template is None:
        return None
    present = [*columns, "reference"]
    try:
        names = template_fields(template)
    except ValueError as exc:
        raise UserError(f"{where}: {exc}") from None
    for name in names:
        if name not in present:
            raise UserError(f"{where}: {unknown_field_problem(name, present)}")
    return template


def question_request(system: str, title: str, question: str, *,
                     max_output_tokens: int | None = None) -> Request:
    """The paper's question: game and question verbatim from the item table."""
    return QuestionPrompt(system).request({"title": title, "question": question},
                                          max_output_tokens=max_output_tokens)


def prompt_sha256(system: str, template: str = USER_TEMPLATE) -> str:
    """Hash of the exact skeleton a run used (system prompt + user template)."""
    return sha256_text(system + "\x00" + template)
