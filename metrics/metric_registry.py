"""Every metric `contam score` computes, in one place: :data:`METRICS`, a :class:`MetricSpec` per
metric.

A spec is the whole of what the rest of contam knows of its metric: the name stored in
``scores.metric`` (also its column of the store's ``cells`` view, and its name in ``[scoring]
metrics`` and ``[study] correct``), the label people read, its kind (a binary rule, a graded
score, or a model-based graded score), the study settings that enter its ``scores.params`` (so
a changed setting scores again), and its scorer, named by dotted path and imported only when
used. How a value becomes right or wrong is :mod:`contam.metrics.outcome`'s: a rule is right when
its value is 1.0; a graded metric only under a threshold the study states (``bleu2 >= 0.5``).

This module imports nothing of contam: the config's checks, the store's views, the command line
and the report all read it, so it sits at the bottom of the layers (scripts/check_layers.py).
Adding a metric is one entry here and its module. See ARCHITECTURE.md, Where an addition goes.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["RULE", "GRADED", "MODEL", "MetricSpec", "METRICS", "DEFAULT_METRICS", "rule_metrics",
           "study_metrics", "metric_labels", "find_metric", "resolve"]

RULE = "rule"  # 1.0 right, 0.0 wrong, None not scorable
GRADED = "graded"  # a score in [0, 1], computed from the texts alone
MODEL = "model"  # a graded score that needs a model (its own pass in `contam score`)
_NAME = re.compile(r"[a-z][a-z0-9_]*")  # a column of `cells`, spelt into SQL as it is


@dataclass(frozen=True)
class MetricSpec:
    """A registered metric. ``scorer``: ``(**settings) -> (score_many, params)``, ``score_many``
    mapping (answer, reference) pairs to values, ``params`` what each row records; None where
    `contam score` runs the metric in a pass of its own (BERTScore). ``settings``: the
    ``StudySettings`` fields the scorer takes. ``flag``: its ``--metric`` spelling where that
    differs from ``name``. ``requires``: a package it needs that contam does not install."""

    name: str
    label: str
    kind: str
    scorer: str | None
    settings: tuple[str, ...] = ()
    flag: str | None = None
    requires: str | None = None
    default: bool = False  # scored when the study names no [scoring] metrics
    in_study: bool = True  # [scoring] metrics may name it (False: a cross-check only)
    answer_alone: bool = False  # right only for the answer alone: a sentence around it is wrong

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name) or self.kind not in (RULE, GRADED, MODEL):
            raise ValueError(f"metric {self.name!r}: a lower-case identifier of kind rule, "
                             "graded or model")

    @property
    def choice(self) -> str:
        """Its ``--metric`` name."""
        return self.flag or self.name


_BLEU2 = MetricSpec("bleu2", "BLEU-2", GRADED, "contam.metrics.bleu:bleu2_scorer", default=True)
_BLEU2_NLTK = MetricSpec("bleu2_nltk", "BLEU-2 (NLTK)", GRADED, "contam.metrics.bleu:bleu2_nltk_scorer",
                         requires="nltk", in_study=False)
_BERTSCORE = MetricSpec("bertscore_f1", "BERTScore-F1", MODEL, None, flag="bertscore", default=True)
_EXACT = MetricSpec("exact", "Exact match", RULE, "contam.metrics.rules:exact_scorer", answer_alone=True)
_CONTAINS = MetricSpec("contains", "Contains", RULE, "contam.metrics.rules:contains_scorer")
_NUMERIC = MetricSpec("numeric", "Numeric", RULE, "contam.metrics.rules:numeric_scorer",
                      settings=("numeric_tolerance",))
_REGEX = MetricSpec("regex", "Regex + exact", RULE, "contam.metrics.rules:regex_scorer", settings=("regex",))

METRICS: dict[str, MetricSpec] = {spec.name: spec for spec in (
    _BLEU2, _BLEU2_NLTK, _BERTSCORE, _EXACT, _CONTAINS, _NUMERIC, _REGEX)}
# The paper's metrics: what `contam score` computes when the study names none.
DEFAULT_METRICS: tuple[str, ...] = tuple(name for name, spec in METRICS.items() if spec.default)


def rule_metrics() -> tuple[str, ...]:
    """The binary rules, in registry order."""
    return tuple(name for name, spec in METRICS.items() if spec.kind == RULE)


def study_metrics() -> tuple[str, ...]:
    """What ``[scoring] metrics`` may name."""
    return tuple(name for name, spec in METRICS.items() if spec.in_study)


def metric_labels() -> dict[str, str]:
    """Each metric's stored name -> the label people read."""
    return {name: spec.label for name, spec in METRICS.items()}


def find_metric(name: str) -> MetricSpec | None:
    """The spec a stored name or a ``--metric`` name stands for; None when neither."""
    return METRICS.get(name) or next((s for s in METRICS.values() if s.flag == name), None)


def resolve(path: str) -> Any:
    """The object a dotted path names: ``"package.module:attribute"``, imported now."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)
