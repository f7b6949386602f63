"""`contam view` in a real browser (Debian's headless chromium): a browse
page left open while a run writes says how many answers are new; at a phone's width (390 px) the
numbers of the browse, cell and agreement pages are on screen; and axe-core finds no serious or
critical violation on the browse, cell, agreement and label pages at 390 and 1280 px.

Seconds each, like tests/test_view_browser.py: `contam view` runs as a child process and a real
browser renders every page."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from contam.harness.engine.counters import LaneStats
from contam.harness.jobs.live import serving_reads
from contam.harness.store import Store, utc_now
from tests.browserkit import ViewServer, axe_violations, chromium, wait_until
from tests.viewkit import MODELS, RICH_CELL, add_rich_cell, build_view_store

pytestmark = pytest.mark.timeout(300)

NEW_MODEL = "newcomer-3b"
PAGES = {"browse": "/", "cell": f"/cell?item=it001&model={MODELS[0]}", "agreement": "/agree",
         "label": "/label?rater=kb",
         # no title, rule metrics, two judges, a note, a withdrawn label (tests/viewkit.py)
         "rich cell": f"/cell?item={RICH_CELL[0]}&model={RICH_CELL[1]}"}
# What must be on screen at 390 px: the page's numbers
NUMBERS = {"browse": "#cells td.score", "cell": "#attempts td.outcome, #attempts td.http, "
           "#attempts td.error-text", "agreement": "td.kappa, td.kappa-ci"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """8 items x 2 models, two raters on some cells, a 429 then an answer on it001."""
    store = add_rich_cell(build_view_store(tmp_path_factory.mktemp("pages") / "s.duckdb", items=8))
    with Store(store) as opened:
        opened.append("labels", [{"item_id": f"it{n:03d}", "model": m, "rater": rater,
                                  "label": ("right", "partial", "wrong")[(n + k + len(rater)) % 3],
                                  "created_at": utc_now()}
                                 for n in range(6) for k, m in enumerate(MODELS)
                                 for rater in ("human:ann", "human:bo")])
        opened.append("attempts", [
            {"run_id": "r1", "item_id": "it001", "model": MODELS[0], "attempt": 1,
             "started_at": utc_now(), "outcome": "rate_limited", "http_status": 429,
             "error": "429 Too Many Requests: " + "slow down, " * 12},
            {"run_id": "r1", "item_id": "it001", "model": MODELS[0], "attempt": 2,
             "started_at": utc_now(), "outcome": "ok", "http_status": 200}])
    with ViewServer(store) as view:
        yield view


def _by(kind: str):
    from selenium.webdriver.common.by import By

    return getattr(By, kind)



@contextmanager
def viewport(driver, width: int, height: int):
    """The page's viewport exactly this size (a window's frame would take some of it)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500})
    try:
        yield
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def _open(driver, view: ViewServer, path: str) -> None:
    driver.get(view.url)  # the token, once: it becomes the cookie
    driver.get(view.base + path)


# -- item 7: a phone's width -------------------------------------------------------------------

@pytest.mark.parametrize("page", sorted(NUMBERS))
def test_at_390_px_the_numbers_are_on_screen(browser, server, page):
    with viewport(browser, 390, 844):
        _open(browser, server, PAGES[page])
        boxes = browser.execute_script(
            "return [...document.querySelectorAll(arguments[0])].map(e => {"
            "  const r = e.getBoundingClientRect(); return [r.left, r.right, r.width]; });",
            NUMBERS[page])
        inner = browser.execute_script("return window.innerWidth")
        scroll = browser.execute_script("return document.documentElement.scrollWidth")
    assert inner == 390 and scroll <= inner
    assert len(boxes) >= {"browse": 16, "cell": 6, "agreement": 2}[page]
    off = [box for box in boxes if box[0] < 0 or box[1] > inner or box[2] <= 0]
    assert off == [], f"{page}: {len(off)} of {len(boxes)} numbers off-screen"


def test_every_table_scroll_box_is_reachable_by_keyboard(browser, server):
    for path in (PAGES["browse"], PAGES["cell"], PAGES["agreement"]):
        _open(browser, server, path)
        boxes = browser.find_elements(_by("CSS_SELECTOR"), ".scroll")
        assert boxes and all(b.get_attribute("tabindex") == "0" for b in boxes), path
        assert all(b.get_attribute("role") == "region" for b in boxes), path


@pytest.mark.parametrize("width, height", [(390, 844), (1280, 800)])
@pytest.mark.parametrize("page", sorted(PAGES))
def test_axe_finds_no_serious_or_critical_violation(browser, server, page, width, height):
    with viewport(browser, width, height):
        _open(browser, server, PAGES[page])
        violations = axe_violations(browser)
    print(f"axe {page} at {width} px: {violations or 'no violations'}")
    assert violations == {}, (page, width, violations)


@pytest.mark.parametrize("width, height", [(390, 844), (1280, 800)])
def test_axe_finds_nothing_on_the_cell_page_after_a_label_is_saved_there(browser, server, width,
                                                                       height):
    rater = f"human:w{width}"
    with viewport(browser, width, height):
        _open(browser, server, PAGES["rich cell"])
        browser.find_element(_by("ID"), "cell-rater").send_keys(rater)
        browser.find_element(_by("ID"), "cell-note").send_keys("saved from the page")
        browser.find_element(_by("CSS_SELECTOR"), "[data-cell-label]").click()
        wait_until(browser, lambda d: rater in d.find_element(_by("CSS_SELECTOR"), "table.stack").text)
        violations = axe_violations(browser)
    assert violations == {}, (width, violations)


# -- item 6: browsing while a run writes --------------------------------------------------------

def _answers(numbers: range) -> list[dict]:
    return [{"run_id": "live", "item_id": f"it{n:03d}", "model": NEW_MODEL, "provider": "import",
             "answer_raw": f"New answer {n}.", "answer": f"New answer {n}.", "created_at": utc_now()}
            for n in numbers]


def _notice(driver) -> str:
    notice = driver.find_element(_by("ID"), "new-answers")
    return notice.text if notice.is_displayed() else ""


def test_a_browse_page_left_open_during_a_run_says_how_many_answers_are_new(tmp_path, browser):
    store = build_view_store(tmp_path / "s.duckdb", items=4)
    with ViewServer(store) as view:
        _open(browser, view, "/")
        assert browser.find_element(_by("ID"), "count").text.startswith("8 cells")
        assert _notice(browser) == ""
        lane = LaneStats(label=NEW_MODEL, total=4, cap=2)
        with Store(store) as opened, serving_reads(opened, "run") as board:
            board.watch([lane])
            opened.append("answers", _answers(range(2)))
            lane.done = 2
            wait_until(browser, lambda d: _notice(d).startswith("2 new answers"))
            live = browser.find_element(_by("ID"), "live")
            assert live.is_displayed() and NEW_MODEL in live.text
            opened.append("answers", _answers(range(2, 3)))
            lane.done = 3
            wait_until(browser, lambda d: _notice(d).startswith("3 new answers"))
        # the run is over: the panel goes, the notice stays until the page is reloaded
        wait_until(browser, lambda d: not d.find_element(_by("ID"), "live").is_displayed())
        assert _notice(browser).startswith("3 new answers since this page was built")
        assert browser.find_element(_by("ID"), "count").text.startswith("8 cells")
        browser.find_element(_by("ID"), "new-answers-reload").click()
        wait_until(browser, lambda d: d.find_element(_by("ID"), "count").text.startswith("11 cells"))
        assert _notice(browser) == ""
