"""The study's outcome: what makes an answer correct (``[study] correct``, ``contam report
--correct``), parsed against :mod:`metrics.metric_registry`.

One of: ``labels`` (the human rater's label, else the judge's), a rule metric's name (right when
its value is 1.0), or a graded metric with one comparison against a number (``bleu2 >= 0.5``;
``>=``, ``>``, ``<=``, ``<``, nothing else is parsed). A rule or a threshold is right or not:
partial credit exists only for labels. Without a setting, :func:`default_outcome` chooses.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass

from harness.errors import UserError
from metrics.metric_registry import METRICS, RULE, rule_metrics

__all__ = ["LABELS", "Outcome", "parse_outcome", "default_outcome", "accepted_outcomes"]

LABELS = "labels"
_OPERATORS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
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

    def sql(self, column: str) -> str:
        """Whether ``column`` (the metric's value) is right, in SQL: NULL stays NULL. The report's
        one right/wrong computation (harness.report.cells) reads it."""
        if self.comparison is None:
            return f"({column} = 1.0)"
        return f"({column} {self.comparison} {self.threshold!r})"


def accepted_outcomes() -> str:
    """What ``correct`` accepts, in one line."""
    graded = [name for name, spec in METRICS.items() if spec.kind != RULE and spec.in_study]
    examples = ", ".join(f'"{name} >= 0.5"' for name in graded)
    return f'"{LABELS}", ' + ", ".join(f'"{name}"' for name in rule_metrics()) + f", or {examples}"


def parse_outcome(text: str, where: str = "[study] correct") -> Outcome:
    """``text`` as an :class:`Outcome`; refused in one line naming the accepted values."""
    name = text.strip()
    if name == LABELS:
        return Outcome()
    spec = METRICS.get(name)
    if spec is not None and spec.kind == RULE:
        return Outcome(name)
    found = _COMPARISON.fullmatch(text)
    if found and found[1] in METRICS and METRICS[found[1]].kind != RULE:
        return Outcome(found[1], found[2], float(found[3]))
    why = _why_refused(name, found)
    raise UserError(f"{where}: {text!r} {why} (accepted: {accepted_outcomes()})")


def _why_refused(name: str, found: re.Match | None) -> str:
    spec = METRICS.get(found[1] if found else name)
    if spec is None:
        return "is no metric nor labels"
    if spec.kind == RULE:
        return "is a rule, right or not: it takes no threshold"
    return f"is graded: give it a threshold, e.g. {spec.name} >= 0.5"


def default_outcome(has_labels: bool, metrics: tuple[str, ...]) -> Outcome | None:
    """Without a setting: labels where the store has them, else the first rule metric of the
    study's ``[scoring] metrics``, else none."""
    if has_labels:
        return Outcome()
    rule = next((name for name in metrics if name in rule_metrics()), None)
    return Outcome(rule) if rule else None
