"""The rows a probe's report part reads: the latest ``probe_scores`` of one probe under one set
of parameters, with each item's subset."""

from __future__ import annotations

import duckdb
import pandas as pd

__all__ = ["latest_params", "score_frame"]


def latest_params(con: duckdb.DuckDBPyConnection, probe: str) -> str | None:
    """The parameters hash of the probe's most recently recorded parameters (a study that ran a
    probe twice with different parameters is reported on the later ones), or None."""
    row = con.execute("SELECT params_sha256 FROM probe_params WHERE probe = ? ORDER BY seq DESC "
                      "LIMIT 1", [probe]).fetchone()
    return row[0] if row else None


def score_frame(con: duckdb.DuckDBPyConnection, probe: str, params_sha256: str) -> pd.DataFrame:
    """model, item_id, subset, metric, value (NaN for NULL) of every latest score."""
    return con.execute("""
        SELECT s.model, s.item_id, i.subset, s.metric, s.value
        FROM latest_probe_scores s JOIN latest_items i USING (item_id)
        WHERE s.probe = ? AND s.params_sha256 = ?
        ORDER BY s.model, s.item_id, s.metric""", [probe, params_sha256]).df()
