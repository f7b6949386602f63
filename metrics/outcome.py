"""The study's outcome: what makes an answer correct (``[study] correct``, ``contam report
--correct``), parsed against :mod:`contam.metrics.metric_registry`.

One of: ``labels`` (the human rater's label, else the judge's), a rule metric's name (right when
its value is 1.0), or a graded metric with one comparison against a number (``bleu2 >= 0.5``;
``>=``, ``>``, ``<=``, ``<``, nothing else is parsed). A rule or a threshold is right or not:
partial credit exists only for labels. Without a setting, :func:`default_outcome` chooses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contam.harness.errors import UserError
from contam.metrics.metric_registry import METRICS, RULE, MetricSpec, rule_metrics, study_metrics

__all__ = ["LABELS", "Outcome", "parse_outcome", "default_outcome", "accepted_outcomes",
           "prompt_mismatch"]

LABELS = "labels"
# A prompt that asks for prose ("a bare 1-2 sentence answer"), not one that forbids it ("no sentence").
_SENTENCES = re.compile(r"(?<!\bno )\bsentences?\b", re.IGNORECASE)
_HEAD = re.compile(r"\s*([a-z0-9_]*)")  # the metric a text names first
_COMPARISON = re.compile(r"\s*([a-z][a-z0-9_]*)\s*(>=|<=|>|<)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*")


@dataclass(frozen=True)
class Outcome:
    """``metric`` None: labels. A rule metric has no comparison; a graded one has both."""

    metric: str | None = None
    comparison: str | None = None
    threshold: float | None = None

    @property
    def labels(self) -> bool:
        return self.metric is None

    def __str__(self) -> str:
        if self.metric is None:
            return LABELS
        if self.comparison is None:
            return self.metric
        return f"{self.metric} {self.comparison} {self.threshold:g}"

    def call_sql(self, column: str) -> str:
        """A metric's call on a cell in SQL: 'right' or 'wrong' from ``column`` (its value), NULL
        where it has none. The one place a value becomes right or wrong: the report's cells
        (contam.harness.report.inputs.cells) and the probe validation's density rows read it."""
        if self.comparison is None:
            test = f"{column} = 1.0"
        else:
            test = f"{column} {self.comparison} {self.threshold!r}"
        return f"CASE WHEN {column} IS NULL THEN NULL WHEN {test} THEN 'right' ELSE 'wrong' END"


def accepted_outcomes() -> str:
    """What ``correct`` accepts, in one line."""
    graded = [name for name in study_metrics() if METRICS[name].kind != RULE]
    examples = ", ".join(f'"{name} >= 0.5"' for name in graded)
    return f'"{LABELS}", ' + ", ".join(f'"{name}"' for name in rule_metrics()) + f", or {examples}"


def parse_outcome(text: str, where: str = "[study] correct") -> Outcome:
    """``text`` as an :class:`Outcome`; refused in one line naming the accepted values."""
    if text.strip() == LABELS:
        return Outcome()
    found = _COMPARISON.fullmatch(text)
    head = found[1] if found else _HEAD.match(text)[1]
    spec = METRICS.get(head) if head in study_metrics() else None
    if spec is not None and spec.kind == RULE and head == text.strip():
        return Outcome(head)
    if spec is not None and spec.kind != RULE and found:
        return Outcome(head, found[2], float(found[3]))
    raise UserError(f"{where}: {text!r} {_why_refused(spec)} (accepted: {accepted_outcomes()})")


def _why_refused(spec: MetricSpec | None) -> str:
    if spec is None:
        return "is no metric nor labels"
    if spec.kind == RULE:
        return "is a rule, right or not: it takes no threshold"
    return f"is graded: give it one threshold, e.g. {spec.name} >= 0.5"


def default_outcome(has_labels: bool, metrics: tuple[str, ...]) -> Outcome | None:
    """Without a setting: labels where the store has them, else the first rule metric of the
    study's ``[scoring] metrics``, else none."""
    if has_labels:
        return Outcome()
    rule = next((name for name in metrics if name in rule_metrics()), None)
    return Outcome(rule) if rule else None


def prompt_mismatch(outcome: Outcome | None, prompts: tuple[str | None, ...]) -> str | None:
    """One line when the outcome is a metric that needs the answer alone (``exact``) and a
    prompt asks for sentences, which no exact match can equal; else None."""
    if outcome is None or outcome.labels or not METRICS[outcome.metric].answer_alone:
        return None
    asking = next((p for p in prompts if p and _SENTENCES.search(p)), None)
    if asking is None:
        return None
    return (f"warning: correct = {outcome} needs the answer alone, but the prompt asks for "
            f"sentences ({asking.strip()!r}); set [prompt] system to e.g. "
            "\"Reply with the answer alone: no sentence.\"")
