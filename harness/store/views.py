"""The store's views built from code: ``cells``, the migrated ``cell_base`` with one column per
metric of :mod:`contam.metrics.metric_registry` (its latest value, 1.0 / 0.0 / NULL for a rule). The
tables and ``cell_base`` are migrated (:mod:`contam.harness.store.schema`); ``cells`` is rebuilt when a
store opens and its metric columns differ from the registry's, so a new metric is a column
without a migration."""

from __future__ import annotations

import duckdb

from contam.metrics.metric_registry import METRICS

__all__ = ["cells_view_sql", "cells_view_current"]


def cells_view_sql() -> str:
    """``CREATE OR REPLACE VIEW cells``: ``cell_base`` and each registered metric's latest value."""
    pivots = ",\n".join(f"           max(value) FILTER (WHERE metric = '{name}') AS {name}"
                        for name in METRICS)  # registry names are identifiers (MetricSpec)
    return ("CREATE OR REPLACE VIEW cells AS\n"
            "SELECT b.*, " + ", ".join(f"s.{name}" for name in METRICS) + "\n"
            "FROM cell_base b LEFT JOIN (\n"
            f"    SELECT item_id, model,\n{pivots}\n"
            "    FROM latest_scores GROUP BY ALL) s USING (item_id, model)")


def cells_view_current(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``cells`` is ``cell_base`` followed by exactly the registry's metric columns."""
    base = _columns(con, "cell_base")
    return _columns(con, "cells") == [*base, *METRICS]


def _columns(con: duckdb.DuckDBPyConnection, view: str) -> list[str]:
    rows = con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                       "AND table_schema = 'main' ORDER BY ordinal_position", [view]).fetchall()
    return [name for (name,) in rows]
