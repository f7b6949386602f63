"""What the report's study sections read besides the store's cells: the study's settings
(``[study] exposure``, ``released``, ``subsets``) and each model's training cut-off
(``[[models]] cutoff``). ``contam report --config FILE`` takes both from that config; without it
they come from what the newest ``contam run`` recorded in ``runs.config``, else the paper's
defaults (no study sections). See ARCHITECTURE.md, "A study's settings".
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from contam.harness.config import load_config
from contam.harness.study import StudySettings, settings_from_record

if TYPE_CHECKING:
    from contam.harness.store.access import Reader

__all__ = ["StudyInputs", "study_inputs"]

# The same record contam.harness.store.settings reads, through a Reader (a job may hold the store).
_NEWEST_RUN_CONFIG = """
SELECT config FROM runs WHERE kind = 'run' AND config IS NOT NULL
ORDER BY started_at DESC NULLS LAST, seq DESC LIMIT 1"""


@dataclass(frozen=True)
class StudyInputs:
    settings: StudySettings = field(default_factory=StudySettings)
    cutoffs: dict[str, datetime.date] = field(default_factory=dict)  # model label -> cut-off
    source: str = "defaults"  # the config's path, "the newest run's record", or "defaults"


def study_inputs(reader: Reader, config_path: str | Path | None) -> StudyInputs:
    """``--config`` wins; otherwise the newest run's record; otherwise the defaults."""
    if config_path:
        config = load_config(config_path)
        cutoffs = {spec.name: spec.cutoff for spec in config.models if spec.cutoff}
        return StudyInputs(config.study, cutoffs, str(config_path))
    rows = reader.query(_NEWEST_RUN_CONFIG)
    if not rows:
        return StudyInputs()
    record = orjson.loads(rows[0][0])
    return StudyInputs(settings_from_record(record.get("study")), _recorded_cutoffs(record),
                       "the newest run's record")


def _recorded_cutoffs(record: dict[str, Any]) -> dict[str, datetime.date]:
    """``runs.config["models"][i]["cutoff"]`` (ISO text) by model label; checked when recorded."""
    return {m["name"]: datetime.date.fromisoformat(m["cutoff"]) for m in record.get("models") or []
            if m.get("cutoff") and m.get("name")}
