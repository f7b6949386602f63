"""``--store``, the argument most commands share: the DuckDB store they read or write."""

from __future__ import annotations

from typing import Any

from contam.harness.declare import Flag, option
from contam.harness.store import DEFAULT_STORE  # the path alone: DuckDB is imported when a store opens

__all__ = ["store_flag", "store_option"]

_STORE = "--store"
_HELP = f"DuckDB store (default {DEFAULT_STORE})"


def store_flag(default: str | None = DEFAULT_STORE) -> Flag:
    """``--store`` for a command whose job takes the store as its own keyword (``store=``)."""
    return Flag(_STORE, help=_HELP, cli_default=default)


def store_option(help: str, default: str | None = None) -> Any:
    """``--store`` as a field of a command's options (bench's: a store of its own)."""
    return option(_STORE, default=default, help=help)
