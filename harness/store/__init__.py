"""The DuckDB store: schema as numbered migrations, the append path, the views."""

from harness.store.store import (DEFAULT_STORE, MIGRATIONS, TABLE_COLUMNS, Store, insert_statement,
                                 utc_now)

__all__ = ["DEFAULT_STORE", "MIGRATIONS", "TABLE_COLUMNS", "Store", "insert_statement", "utc_now"]
