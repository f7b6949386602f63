"""Which study settings a command without a config of its own uses: ``--config FILE`` when
given, else what the newest ``contam run`` recorded in ``runs.config``, else the paper's."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from contam.harness.config import load_config
from contam.harness.study import StudySettings, settings_from_record

if TYPE_CHECKING:
    from contam.harness.store.store import Store

__all__ = ["recorded_study", "study_settings"]

_NEWEST_RUN_CONFIG = """
SELECT config FROM runs WHERE kind = 'run' AND config IS NOT NULL
ORDER BY started_at DESC NULLS LAST, seq DESC LIMIT 1"""


def recorded_study(store: Store) -> StudySettings:
    """The settings the newest run recorded (the defaults for a store with none)."""
    row = store.con.execute(_NEWEST_RUN_CONFIG).fetchone()
    return settings_from_record(orjson.loads(row[0]).get("study") if row else None)


def study_settings(store: Store, config_path: str | Path | None) -> StudySettings:
    """``--config`` wins; otherwise the store's own record."""
    return load_config(config_path).study if config_path else recorded_study(store)
