"""The rule-based metrics (``exact``, ``contains``, ``numeric``, ``regex``; :mod:`metrics.rules`)
as `contam score` runs them: each answer scored 1.0, 0.0 or NULL, with the study's
``[scoring] numeric_tolerance`` and ``regex`` recorded in ``scores.params``, so that a changed
setting scores every answer again and an unchanged one scores only what is new.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from harness.declare import flag_of
from harness.errors import UserError
from harness.jobs.options.score import ScoreOptions
from harness.study import StudySettings
from metrics import rules

__all__ = ["RULE_METRICS", "check_rule_settings", "rule_scorer"]

RULE_METRICS = rules.RULE_METRICS
Pair = tuple[str | None, str | None]


def check_rule_settings(metrics: Sequence[str], study: StudySettings) -> None:
    """Refuse, before anything is written, a ``regex`` metric without a usable pattern."""
    if "regex" in metrics:
        if not study.regex:
            raise UserError("metric regex needs [scoring] regex = \"...(group)...\" in the study's "
                            f"config (give it with {flag_of(ScoreOptions, 'config')} FILE, or record it with "
                            "contam run)")
        rules.compile_answer_regex(study.regex)


def rule_scorer(metric: str, study: StudySettings) -> tuple[Callable, dict]:
    """(score_many over (answer, reference) pairs, the params its rows record)."""
    rule = _rule(metric, study)
    params = rules.rule_params(metric, tolerance=study.numeric_tolerance, regex=study.regex)
    return (lambda pairs: [rule(answer, reference) for answer, reference in pairs]), params


def _rule(metric: str, study: StudySettings) -> Callable[[str | None, str | None], float | None]:
    """The metric as a function of (answer, reference), its settings bound."""
    if metric == "numeric":
        return partial(rules.numeric, tolerance=study.numeric_tolerance)
    if metric == "regex":
        return partial(rules.regex_match, pattern=rules.compile_answer_regex(study.regex))
    return {"exact": rules.exact, "contains": rules.contains}[metric]
