"""The record of one import: the file as the user named it, its sha256 and size, how many records
it held and how many were new. One row of the ``imports`` table (migration 7), written inside the
import's own transaction, so a refused file leaves none; the report's provenance lists them."""

from __future__ import annotations

from pathlib import Path

from harness.jobs.records import file_sha256
from harness.store import Store, utc_now

__all__ = ["record_import"]


def record_import(store: Store, kind: str, path: str | Path, *, rows: int, added: int) -> str:
    """Append the import's row; returns the file's sha256."""
    digest, size = file_sha256(path), Path(path).stat().st_size
    store.append("imports", [{"kind": kind, "file": str(path), "sha256": digest, "bytes": size,
                              "rows": rows, "added": added, "created_at": utc_now()}])
    return digest
