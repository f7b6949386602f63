"""The DuckDB store: schema as numbered migrations, the append path, the views.

Every command's argument parser reads ``DEFAULT_STORE``, so it is defined here and the rest is
imported on first use (PEP 562): `contam --version` and `--help` never load DuckDB.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["DEFAULT_STORE", "MIGRATIONS", "TABLE_COLUMNS", "Store", "insert_statement", "utc_now"]

DEFAULT_STORE = "runs/contam.duckdb"

if TYPE_CHECKING:
    from contam.harness.store.store import MIGRATIONS, TABLE_COLUMNS, Store, insert_statement, utc_now


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("contam.harness.store.store"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
