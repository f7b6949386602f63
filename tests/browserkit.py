"""Real-browser testing of `contam view`: the launcher and the server child process come from
scripts/viewserver.py; here is what decides whether they can run.

Where the browser is missing, the tests skip with a one-line reason; under CI (``CI=true``) they
fail with it instead: CI must not pass without having run them (`scripts/test` installs the two
Debian packages with apt-get).
"""

from __future__ import annotations

import os

import pytest

from scripts.viewserver import CHROMEDRIVER, CHROMIUM, ViewServer, chromium

__all__ = ["require_browser", "chromium", "ViewServer"]


def require_browser() -> None:
    """Skip (or, under CI, fail) with a one-line reason when the browser cannot run."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    reason = None
    if missing:
        reason = f"{' and '.join(missing)} missing (apt-get install chromium chromium-driver)"
    else:
        try:
            import selenium  # noqa: F401
        except ImportError:
            reason = "selenium is not installed (pip install 'contam[test]')"
    if reason is None:
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser tests cannot run: {reason}", pytrace=False)
    pytest.skip(reason)
