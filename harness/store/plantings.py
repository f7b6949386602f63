"""The ``plantings`` table by name: what ``contam plant`` recorded of each model it fine-tuned on
known items, and which configured model names stand for a planted model and for its base, read
from the runs' recorded configs (ARCHITECTURE.md, The store)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contam.harness.store.store import Store

__all__ = ["record_planting", "plantings", "has_planting", "configured_models"]

_LATEST = """
SELECT * EXCLUDE (seq, rn) FROM (
    SELECT *, row_number() OVER (PARTITION BY name ORDER BY seq DESC) AS rn FROM plantings)
WHERE rn = 1 ORDER BY name
"""

# Each run's config lists its models (``spec.public_dict()``): name, provider and model string.
_MODELS = """
SELECT DISTINCT m.name, m.provider, m.model FROM (
    SELECT unnest(from_json(config->'models', '[{"name": "VARCHAR", "provider": "VARCHAR",
                                                   "model": "VARCHAR"}]')) AS m
    FROM runs WHERE json_type(config->'models') = 'ARRAY')
ORDER BY m.name
"""


def record_planting(store: Store, row: Mapping[str, Any]) -> None:
    """One planted model's record (lists and dicts stored as JSON)."""
    as_json = {key: json.dumps(value) if isinstance(value, list | dict) else value
               for key, value in row.items()}
    with store.transaction():
        store.append("plantings", [as_json])


def plantings(store: Store) -> list[dict[str, Any]]:
    """The latest record of each planted model, JSON columns decoded, by name."""
    rows = store.query_dicts(_LATEST)
    for row in rows:
        for key in ("planted_items", "loss_per_epoch", "versions"):
            row[key] = json.loads(row[key]) if row[key] else None
    return rows


def has_planting(store: Store, name: str, weights_sha256: str) -> bool:
    """Whether the store already records ``name`` with these weights."""
    return bool(store.query("SELECT 1 FROM plantings WHERE name = $name AND weights_sha256 = $sha",
                            {"name": name, "sha": weights_sha256}))


def configured_models(store: Store) -> list[tuple[str, str, str]]:
    """(name, provider, model) of every model a recorded run configured."""
    return store.query(_MODELS)
