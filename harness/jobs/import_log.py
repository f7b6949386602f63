"""The record of one import: the file as the user named it, its sha256 and size, how many records
it held and how many were new. One row of the ``imports`` table (migration 7), written inside the
import's own transaction, so a refused file leaves none; the report's provenance lists them."""

from __future__ import annotations

import hashlib
from pathlib import Path

from harness.errors import InputError
from harness.store import Store, utc_now

__all__ = ["record_import", "file_sha256"]


def file_sha256(path: str | Path) -> tuple[str, int]:
    """(hex sha256, size in bytes) of the file's bytes as they are on disk."""
    try:
        with open(path, "rb") as handle:
            digest = hashlib.file_digest(handle, "sha256")
            return digest.hexdigest(), handle.tell()
    except OSError as exc:
        raise InputError(str(path), None, exc.strerror or "cannot read") from None


def record_import(store: Store, kind: str, path: str | Path, *, rows: int, added: int) -> str:
    """Append the import's row; returns the file's sha256."""
    digest, size = file_sha256(path)
    store.append("imports", [{"kind": kind, "file": str(path), "sha256": digest, "bytes": size,
                              "rows": rows, "added": added, "created_at": utc_now()}])
    return digest
