"""Real-browser testing of `contam view`: the launcher and the server child process come from
scripts/viewserver.py; here is what decides whether they can run.

Where the browser is missing, the tests skip with a one-line reason; under CI (``CI=true``) they
fail with it instead: CI must not pass without having run them (`scripts/test` installs the two
Debian packages with apt-get).
"""

from __future__ import annotations

from pathlib import Path

from scripts.viewserver import CHROMEDRIVER, CHROMIUM, ViewServer, chromium
from tests.missing import skip_or_fail

__all__ = ["require_browser", "chromium", "ViewServer", "axe_violations"]

AXE = Path(__file__).resolve().parent.parent / "build/axe/node_modules/axe-core/axe.min.js"


def _skip_or_fail(reason: str) -> None:
    skip_or_fail(f"browser tests cannot run: {reason}")


def axe_violations(driver) -> dict[str, int]:
    """Run axe-core 4.x on the page the driver shows: {rule id: number of nodes violating it}.

    axe comes from npm (scripts/test installs it under build/axe); missing, the test skips, or
    fails under CI, with a one-line reason.
    """
    if not AXE.exists():
        _skip_or_fail(f"{AXE} missing (npm install --prefix build/axe axe-core@4.14.1)")
    driver.execute_script(AXE.read_text(encoding="utf-8"))
    result = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document).then(r => done(r.violations.map(v => [v.id, v.nodes.length])));"
    )
    return {rule: count for rule, count in result}


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
    if reason is not None:
        _skip_or_fail(reason)


def wait_until(driver, condition, timeout: float = 60):
    """What ``condition(driver)`` returns once it is truthy, within ``timeout`` seconds."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    # A page that reloads itself drops its elements between finding one and reading it: look again.
    ignored = (NoSuchElementException, StaleElementReferenceException)
    return WebDriverWait(driver, timeout, ignored_exceptions=ignored).until(condition)
