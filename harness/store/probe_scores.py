"""Summaries of what the probes stored (``latest_probe_scores``), for the commands that print
them; the report builds its own from the cells frame (ARCHITECTURE.md, The report)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contam.harness.store.store import Store

__all__ = ["probe_score_means"]

_MEANS_SQL = """
SELECT s.probe, s.metric, s.model, i.subset, avg(s.value) AS mean, count(s.value) AS n
FROM latest_probe_scores s JOIN latest_items i USING (item_id)
WHERE list_contains($models, s.model) AND s.value IS NOT NULL
GROUP BY ALL ORDER BY s.probe, s.metric, s.model, i.subset DESC
"""


def probe_score_means(store: Store, models: Sequence[str]) -> list[tuple]:
    """(probe, metric, model, subset, mean, n) of ``models``' probe scores, averaged per model
    and subset over the items that have a value."""
    return store.query(_MEANS_SQL, {"models": list(models)})
