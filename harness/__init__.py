"""contam: measure how much of a language model's benchmark score is memorised text."""

from __future__ import annotations

import importlib.metadata

__all__ = ["package_version", "__version__"]

__version__ = "0.1.0"  # the one place it is written: pyproject.toml reads it from here


def package_version(distribution: str, default: str | None = "unknown") -> str | None:
    """An installed distribution's version, as runs and score params record it."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return default
