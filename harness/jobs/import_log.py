"""The record of one import: the file as the user named it, its sha256 and size, how many records
it held and how many were new. One row of the ``imports`` table (migration 7), written inside the
import's own transaction, so a refused file leaves none; the report's provenance lists them."""

from __future__ import annotations

from pathlib import Path

from contam.harness.store import Store, utc_now

__all__ = ["record_import"]


def record_import(store: Store, kind: str, path: str | Path, *, sha256: str, rows: int,
                  added: int) -> None:
    """Append the import's row (``sha256``: the file's, as the import hashed it)."""
    store.append("imports", [{"kind": kind, "file": str(path), "sha256": sha256,
                              "bytes": Path(path).stat().st_size, "rows": rows, "added": added,
                              "created_at": utc_now()}])
