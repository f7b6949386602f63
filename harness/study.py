"""A study's own settings: what the config's ``[study]``, ``[prompt] user``, ``[probes]``,
``[scoring]`` and ``[judge] rubric`` say, in one frozen record with the paper's defaults.

``contam run`` records them in ``runs.config`` (key ``study``); the commands that take no config
(``score``, ``report``) read the newest run's record back (:func:`settings_from_record`), and a
``--config FILE`` given to them wins. See ARCHITECTURE.md, "A study's settings".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from metrics.metric_registry import DEFAULT_METRICS

__all__ = ["DEFAULT_METRICS", "DEFAULT_NUMERIC_TOLERANCE", "PAPER_CONTRAST", "StudySettings",
           "settings_from_record"]

DEFAULT_NUMERIC_TOLERANCE = 1e-6
PAPER_CONTRAST = ("official", "fan")  # documented, undocumented: the seed paper's subsets


@dataclass(frozen=True, kw_only=True)
class StudySettings:
    """Every study-level choice; a field left None means "the paper's default"."""

    name: str | None = None  # the benchmark's name in guided prompting's instruction
    exposure: str | None = None  # a numeric item column: how much the world has written
    released: str | None = None  # an ISO-date item column, against each model's cutoff
    subsets: tuple[str, ...] = ()  # ordered tiers, in order of expected exposure (most first)
    user_template: str | None = None  # [prompt] user; None: the paper's user turn
    probe_text: str | None = None  # [probes] text: min-k's text rule; None: today's rule
    metrics: tuple[str, ...] = DEFAULT_METRICS  # [scoring] metrics
    numeric_tolerance: float = DEFAULT_NUMERIC_TOLERANCE  # [scoring] numeric_tolerance
    regex: str | None = None  # [scoring] regex: group 1 of its first match is the answer
    rubric: Path | None = None  # [judge] rubric file; None: the paper's rubric
    correct: str | None = None  # [study] correct (metrics.outcome); None: the default outcome
    extra: dict[str, Any] = field(default_factory=dict)  # reserved: nothing reads it yet

    def contrast(self) -> tuple[str, str]:
        """The report's default documented,undocumented pair: the first and last of ``subsets``
        (most and least exposed) where the study names two or more, else the paper's."""
        return (self.subsets[0], self.subsets[-1]) if len(self.subsets) >= 2 else PAPER_CONTRAST

    def to_record(self) -> dict[str, Any]:
        """The JSON-able form stored in ``runs.config["study"]``."""
        record = asdict(self)
        record["subsets"] = list(self.subsets)
        record["metrics"] = list(self.metrics)
        record["rubric"] = str(self.rubric) if self.rubric else None
        return record


def settings_from_record(record: dict[str, Any] | None) -> StudySettings:
    """The settings a run recorded (``runs.config["study"]``); the defaults for an older run."""
    if not record:
        return StudySettings()
    known = {k: v for k, v in record.items() if k in StudySettings.__dataclass_fields__}
    known["subsets"] = tuple(known.get("subsets") or ())
    known["metrics"] = tuple(known.get("metrics") or DEFAULT_METRICS)
    known["rubric"] = Path(known["rubric"]) if known.get("rubric") else None
    return StudySettings(**known)
