"""A study's own settings: what the config's ``[study]``, ``[prompt] user``, ``[probes]``,
``[scoring]`` and ``[judge] rubric`` say, in one frozen record with the paper's defaults.

Each field is declared once, here: its TOML place, kind and meaning (``config_schema.key``). From
that declaration come the config's validation (harness/config.py), the recorded JSON
(:meth:`StudySettings.to_record`, :func:`settings_from_record`), the JSON Schema editors read and
docs/reference/config.md (harness/config_reference.py). ``contam run`` records the settings in
``runs.config`` (key ``study``); the commands that take no config (``score``, ``report``) read the
newest run's record back, and a ``--config FILE`` given to them wins. See ARCHITECTURE.md, "A
study's settings".
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contam.harness.config_schema import fields_of, key
from contam.metrics.metric_registry import DEFAULT_METRICS, study_metrics

__all__ = ["DEFAULT_METRICS", "DEFAULT_NUMERIC_TOLERANCE", "PAPER_CONTRAST", "StudySettings",
           "settings_from_record"]

DEFAULT_NUMERIC_TOLERANCE = 1e-6
PAPER_CONTRAST = ("official", "fan")  # documented, undocumented: the seed paper's subsets


@dataclass(frozen=True, kw_only=True)
class StudySettings:
    """Every study-level choice; a field left None means "the paper's default"."""

    name: str | None = field(default=None, metadata=key(
        "text", "The benchmark's name in guided prompting's instruction.", at="study.name"))
    exposure: str | None = field(default=None, metadata=key(
        "text", "A numeric item column (how much the world has written about the item): the "
        "report's Exposure section.", at="study.exposure"))
    released: str | None = field(default=None, metadata=key(
        "text", "An ISO-date item column, compared with each model's `cutoff`.",
        at="study.released"))
    subsets: tuple[str, ...] = field(default=(), metadata=key(
        "texts", "Ordered tiers, most exposed first: accuracy per tier, the trend, and the "
        "contrast of the first and last.", at="study.subsets"))
    correct: str | None = field(default=None, metadata=key(
        "text", "What makes an answer correct: `labels`, a rule metric (`exact`, `contains`, "
        "`numeric`, `regex`) or one threshold on a graded metric (`bleu2 >= 0.5`).",
        at="study.correct"))
    user_template: str | None = field(default=None, metadata=key(
        "text", "The question's user turn, a template over the item's columns (`{question}`); "
        "unset: the paper's bytes.", at="prompt.user"))
    probe_text: str | None = field(default=None, metadata=key(
        "text", "The text min-k scores, a template over the item's columns; unset: title, "
        "question and reference, each stripped.", at="probes.text"))
    metrics: tuple[str, ...] = field(default=DEFAULT_METRICS, metadata=key(
        "texts", "What `contam score` computes when it is given no metric.",
        choices=study_metrics, at="scoring.metrics"))
    numeric_tolerance: float = field(default=DEFAULT_NUMERIC_TOLERANCE, metadata=key(
        "number", "The `numeric` metric's relative tolerance.", at="scoring.numeric_tolerance"))
    regex: str | None = field(default=None, metadata=key(
        "text", "The `regex` metric's pattern: group 1 of its first match is the answer, then "
        "compared exactly.", at="scoring.regex"))
    rubric: Path | None = field(default=None, metadata=key(
        "text", "A rubric file of your own for `contam judge` (right / partially right / wrong); "
        "unset: the paper's.", at="judge.rubric", file=True))

    def contrast(self) -> tuple[str, str]:
        """The report's default documented,undocumented pair: the first and last of ``subsets``
        (most and least exposed) where the study names two or more, else the paper's."""
        return (self.subsets[0], self.subsets[-1]) if len(self.subsets) >= 2 else PAPER_CONTRAST

    def to_record(self) -> dict[str, Any]:
        """The JSON-able form stored in ``runs.config["study"]``: lists for tuples, text for paths."""
        return {name: _jsonable(getattr(self, name)) for name in fields_of(StudySettings)}


def settings_from_record(record: dict[str, Any] | None) -> StudySettings:
    """The settings a run recorded (``runs.config["study"]``); the defaults for an older run, and
    for each key an older run did not record (a key it recorded that is gone is ignored)."""
    declared = {f.name: f for f in dataclasses.fields(StudySettings)}
    known = {name: _typed(declared[name], value) for name, value in (record or {}).items()
             if name in declared and value not in (None, [])}
    return StudySettings(**known)


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return str(value) if isinstance(value, Path) else value


def _typed(declared: dataclasses.Field, value: Any) -> Any:
    """A recorded JSON value back in the field's own type (a tuple for a list, a Path for a file)."""
    kind = declared.metadata["key"]
    return tuple(value) if kind.kind == "texts" else Path(value) if kind.file else value
