"""A tool a test needs is missing: skip with a one-line reason, or fail under CI (``CI=true``),
which must not pass without having run every test (`scripts/test` installs what they need)."""

from __future__ import annotations

import os

import pytest

__all__ = ["skip_or_fail"]


def skip_or_fail(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)
