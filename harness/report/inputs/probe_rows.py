"""The rows a probe's report part reads: which of a probe's parameter sets to report (the one
with the most scored cells, the latest on a tie), its latest ``probe_scores`` with each item's
subset, and the paragraph naming the sets not reported."""

from __future__ import annotations

from typing import Any

import orjson
import pandas as pd

from contam.harness.store import Store

__all__ = ["chosen_params", "score_frame", "other_params_note"]

_PARAMS_SQL = """
SELECT s.params_sha256, any_value(p.params) AS params, count(DISTINCT (s.item_id, s.model)) AS cells
FROM latest_probe_scores s JOIN probe_params p USING (params_sha256)
WHERE s.probe = ? GROUP BY 1 ORDER BY cells DESC, max(s.seq) DESC
"""


def chosen_params(store: Store, probe: str) -> dict[str, Any] | None:
    """``params_sha256``, ``params`` and ``other_params`` (the hashes not reported), or None when
    the store has no score of ``probe``."""
    rows = store.query_dicts(_PARAMS_SQL, [probe])
    if not rows:
        return None
    return {"params_sha256": rows[0]["params_sha256"], "params": orjson.loads(rows[0]["params"]),
            "other_params": [row["params_sha256"] for row in rows[1:]]}


def score_frame(store: Store, probe: str, params_sha256: str) -> pd.DataFrame:
    """model, item_id, subset, metric, value (NaN for NULL) of every latest score."""
    return store.query_df("""
        SELECT s.model, s.item_id, i.subset, s.metric, s.value
        FROM latest_probe_scores s JOIN latest_items i USING (item_id)
        WHERE s.probe = ? AND s.params_sha256 = ?
        ORDER BY s.model, s.item_id, s.metric""", [probe, params_sha256])


def other_params_note(part: dict[str, Any], kind: str) -> list[str]:
    """The paragraph saying that the store holds ``kind`` scores under other parameter sets
    (``part["other_params"]``), or none."""
    if not part["other_params"]:
        return []
    return [f"The store also holds {kind} scores under {len(part['other_params'])} other parameter "
            "set(s), not shown: query `latest_probe_scores` for them."]
