"""The view's report page in a real browser: it says it is building, then shows
the report inside the view's layout; nothing overflows the page at 390 and 1280 px (tables scroll
in keyboard-focusable boxes); axe-core finds no landmark, region or scroll-box violation; and its
first line names the human rater and its coverage. report.html opened from disk, too. Seconds
each: a `contam view` child process and a report with its figures (matplotlib)."""

from __future__ import annotations

import pytest

from contam.harness.store import Store, utc_now
from tests.browserkit import ViewServer, axe_violations, chromium, require_browser
from tests.test_view_report import CONTRAST, LINE, add_raters
from tests.viewkit import build_view_store

pytestmark = pytest.mark.timeout(300)

# axe rules the report page broke, and the scroll boxes' keyboard rule
LANDMARK_RULES = ("landmark-one-main", "region", "scrollable-region-focusable")


def _by(kind: str):
    from selenium.webdriver.common.by import By

    return getattr(By, kind)


def _with_provenance(path) -> None:
    """A run and an imported file: the provenance tables, with their 64-digit hashes, are the
    report's widest (1,751 px at a 1280 px window before the scroll boxes)."""
    with Store(path) as store:
        store.append("runs", [{"run_id": "r1", "kind": "run", "started_at": utc_now(), "finished_at": utc_now(),
                               "config": '{"models": []}', "prompt_sha256": "a" * 64,
                               "harness_version": "0.1.0"}])
        store.append("imports", [{"kind": "items", "file": "runs/a-rather-long-folder-name/items.csv",
                                  "sha256": "b" * 64, "bytes": 1234, "rows": 12, "added": 12,
                                  "created_at": utc_now()}])


def _wait_for(driver, element_id: str, timeout: float = 120):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: d.find_elements(_by("ID"), element_id))[0]


def test_the_report_page_builds_visibly_fits_390_and_1280_px_and_is_axe_clean(tmp_path):
    require_browser()
    store = build_view_store(tmp_path / "report.duckdb", items=12)
    add_raters(store)
    _with_provenance(store)
    with ViewServer(store, "--unblind") as server, chromium(1280, 800) as driver:
        driver.get(server.url)  # the token, once: it becomes the cookie
        driver.get(f"{server.base}/report?{CONTRAST}")
        assert "Building the report…" in driver.find_element(_by("ID"), "report-building").text
        line = _wait_for(driver, "report-raters").text  # the page asked again and showed it
        assert line == LINE
        assert driver.find_element(_by("CSS_SELECTOR"), "header nav a[href='/agree']").text == "Agreement"
        for width, height in ((390, 844), (1280, 800)):
            driver.set_window_size(width, height)
            inner = driver.execute_script("return window.innerWidth")
            scroll = driver.execute_script("return document.documentElement.scrollWidth")
            assert scroll <= inner, (width, scroll, inner)
            boxes = driver.execute_script(
                "return [...document.querySelectorAll('.scroll')].filter(b => b.scrollWidth > b.clientWidth).length")
            assert boxes > 0  # some tables are wider than the window: they scroll inside their box
            violations = axe_violations(driver)
            assert not set(violations) & set(LANDMARK_RULES), (width, violations)


def test_report_html_on_its_own_fits_390_and_1280_px_and_is_axe_clean(paper_out):
    """The file `contam report` writes (the paper's report: every table, four figures), opened
    from disk: the same layout, scroll boxes and landmarks as inside the view."""
    require_browser()
    with chromium(1280, 800) as driver:
        driver.get((paper_out / "report.html").as_uri())
        for width, height in ((390, 844), (1280, 800)):
            driver.set_window_size(width, height)
            inner = driver.execute_script("return window.innerWidth")
            scroll = driver.execute_script("return document.documentElement.scrollWidth")
            assert scroll <= inner, (width, scroll, inner)
            assert axe_violations(driver) == {}, width
