"""`contam view` in a real browser: Debian's headless chromium (Selenium, chromedriver) against
`contam view` started as a child process. Keyboard labelling that survives a reload and a
kill -9, the token, blind pages, escaping, two raters and their kappa, the browse filters, and
the layout at a phone's width.

Why these take seconds each, not milliseconds: every test starts `contam view` as a process of
its own (a few seconds of imports on two cores) and waits for a real browser to render each
page; the keyboard test waits for 22 keystrokes to be committed one by one, then restarts the
server after a SIGKILL. One browser is shared by the module."""

from __future__ import annotations

import socket

import pytest

from contam.harness.report.statistics import named_tests as stats
from contam.harness.store import Store
from contam.harness.view.queue import order_key
from tests.browserkit import ViewServer, chromium, wait_until
from tests.viewkit import MARKUP, MODELS, SUBSETS, build_view_store

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def servers():
    """Start `contam view` children; every one still running is stopped after the test."""
    started: list[ViewServer] = []

    def start(store, *args: str) -> ViewServer:
        started.append(ViewServer(store, *args).start())
        return started[-1]

    yield start
    for server in started:
        server.stop()


def _by(kind: str):
    from selenium.webdriver.common.by import By

    return getattr(By, kind)



def _press(driver, keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(keys).perform()


def _text(driver, element_id: str) -> str:
    return driver.find_element(_by("ID"), element_id).text


def _cell(driver) -> str:
    return driver.find_element(_by("ID"), "desk").get_attribute("data-cell")


def _shown(driver) -> tuple[str, str]:
    return _text(driver, "c-question"), _text(driver, "c-answer")


def _texts(items: int) -> dict[tuple[str, str], tuple[str, str]]:
    """What the label page shows of each cell: its question and its answer."""
    return {(f"it{n:03d}", m): (f"Question number {n}?", f"Answer {n} from answerer number {k}.")
            for n in range(items) for k, m in enumerate(MODELS)}


def _open(driver, server: ViewServer, path: str) -> None:
    driver.get(server.url)  # the token, once: it becomes the cookie
    driver.get(server.base + path)


def _label_by_key(driver, key: str) -> None:
    before = _cell(driver)
    _press(driver, key)
    wait_until(driver, lambda d: _cell(d) != before and _text(d, "status").startswith("Saved"))


def _blind(driver) -> None:
    html = driver.page_source.lower()
    for secret in (*MODELS, *SUBSETS, "bleu", "bertscore", "judge"):
        assert secret.lower() not in html, secret


def test_twenty_labels_by_keyboard_survive_a_reload_and_kill_9(tmp_path, browser, servers):
    store = build_view_store(tmp_path / "s.duckdb", items=30)
    order = sorted(_texts(30), key=lambda k: order_key(11, *k))
    texts = _texts(30)
    server = servers(store, "--seed", "11")
    _open(browser, server, "/label?rater=kb")
    _blind(browser)
    _press(browser, "?")
    assert browser.find_element(_by("ID"), "help").get_property("open")
    _press(browser, "\ue00c")  # Escape closes the help
    for n, key in enumerate("123rpw123rp"):  # eleven labels
        assert _shown(browser) == texts[order[n]]
        if n == 4:  # a note first: n opens the box, Escape leaves it, the label takes it along
            _press(browser, "n")
            _press(browser, "unsure about the year")
            _press(browser, "\ue00c")
        _label_by_key(browser, key)
    _press(browser, "u")  # the eleventh label is withdrawn and its cell comes back
    wait_until(browser, lambda d: _text(d, "status").startswith("Undone"))
    assert _shown(browser) == texts[order[10]] and _text(browser, "progress-text").startswith("10 / 60")
    for key in "w123rpw123":  # ten more: twenty standing
        _label_by_key(browser, key)
    _blind(browser)
    assert _shown(browser) == texts[order[20]]
    assert _text(browser, "progress-text").startswith("20 / 60")
    browser.refresh()
    assert _shown(browser) == texts[order[20]]

    server.kill9()
    with Store(store, read_only=True) as opened:
        standing = opened.query("SELECT item_id, model, label, note FROM latest_labels "
                                "WHERE rater = 'human:kb' ORDER BY seq")
        retracted = opened.count("labels WHERE retracted")
    assert [(i, m) for i, m, _, _ in standing] == order[:20] and retracted == 1
    assert standing[4][2:] == ("partial", "unsure about the year")  # key p
    again = servers(store, "--seed", "99")  # the seed recorded at the first visit still rules
    _open(browser, again, "/label?rater=kb")
    assert _shown(browser) == texts[order[20]]
    assert _text(browser, "progress-text").startswith("20 / 60")


def test_a_restarted_server_keeps_its_link_and_a_new_token_says_so(tmp_path, browser, servers):
    """An open label page goes on across a restart; after --new-token it says
    that the server has a new link instead of "Forbidden"."""
    store = build_view_store(tmp_path / "s.duckdb", items=6)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    server = servers(store, "--port", port)
    _open(browser, server, "/label?rater=kb")
    _label_by_key(browser, "1")
    server.stop()
    again = servers(store, "--port", port)
    assert again.url == server.url  # the same link: the token is the store's
    _press(browser, "2")  # the page left open recovers: its cell id is stale, so it reloads itself
    wait_until(browser, lambda d: "reload" in _text(d, "status"))
    wait_until(browser, lambda d: "reload" not in _text(d, "status"))
    _label_by_key(browser, "2")  # ... and labels on with the same link
    again.stop()
    rotated = servers(store, "--port", port, "--new-token")
    assert rotated.url != server.url
    _press(browser, "3")
    wait_until(browser, lambda d: "has a new one" in _text(d, "status"))
    assert "Forbidden" not in _text(browser, "status")


def test_a_request_without_the_token_gets_nothing(tmp_path, browser, servers):
    store = build_view_store(tmp_path / "s.duckdb", items=3)
    server = servers(store)
    browser.delete_all_cookies()
    browser.get(server.base + "/label?rater=kb")
    # a plain-text page is drawn into its <pre> after get() returns: wait for the text, not a time
    assert wait_until(browser, lambda d: "403 Forbidden" in d.page_source or d.find_element("tag name", "pre").text)
    assert "403 Forbidden" in browser.page_source
    assert "Question" not in browser.page_source and MODELS[0] not in browser.page_source


def test_markup_in_an_answer_is_shown_as_text_and_never_runs(tmp_path, browser, servers):
    from selenium.common.exceptions import NoAlertPresentException

    store = build_view_store(tmp_path / "s.duckdb", items=4)
    seed = next(s for s in range(10_000)
                if min(_texts(4), key=lambda k: order_key(s, *k)) == ("it000", MODELS[0]))
    server = servers(store, "--seed", str(seed))
    _open(browser, server, "/label?rater=kb")
    assert _text(browser, "c-answer") == MARKUP
    browser.get(server.base + f"/cell?item=it000&model={MODELS[0]}")
    assert browser.find_element(_by("ID"), "answer-raw").text == MARKUP
    browser.get(server.base + f"/?model={MODELS[0]}")
    assert MARKUP[:30] in browser.find_element(_by("ID"), "cells").text
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text


def test_two_raters_label_their_shares_and_the_agreement_page_has_their_kappa(tmp_path, browser,
                                                                              servers):
    store = build_view_store(tmp_path / "s.duckdb", items=4)
    server = servers(store, "--raters", "alice,bob", "--overlap", "1")  # every cell to both
    browser.get(server.url)
    for rater, keys in (("alice", "1213"), ("bob", "11"), ("alice", "2311"), ("bob", "231223")):
        browser.get(server.base + f"/label?rater={rater}")
        for key in keys:
            _label_by_key(browser, key)
    browser.get(server.base + "/agree")
    with Store(store, read_only=True) as opened:
        pairs = opened.query("SELECT a.label, b.label FROM latest_labels a JOIN latest_labels b "
                             "USING (item_id, model) WHERE a.rater = 'human:alice' "
                             "AND b.rater = 'human:bob'")
    assert len(pairs) == 8
    kappa = stats.cohen_kappa(stats.confusion_matrix(pairs, ("right", "partial", "wrong")))
    row = browser.find_element(_by("CSS_SELECTOR"), "#pairs tbody tr").text
    # κ first (the key number stays on a phone's screen), then its interval, then the cell count
    assert row.startswith(f"human:alice human:bob {kappa:.3f} [") and "] 8 " in row


def test_the_browse_filters_by_keyboard_and_sorts(tmp_path, browser, servers):
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    store = build_view_store(tmp_path / "s.duckdb", items=30)
    server = servers(store)
    _open(browser, server, "/")
    _press(browser, Keys.TAB)
    assert browser.switch_to.active_element.text == "Skip to content"
    subset = browser.find_element(_by("ID"), "f-subset")
    subset.send_keys(SUBSETS[1])  # typing an option's name picks it, as for any select
    browser.find_element(_by("ID"), "f-disagree").send_keys(Keys.SPACE)
    browser.find_element(_by("CSS_SELECTOR"), ".filters button").send_keys(Keys.ENTER)
    wait_until(browser, lambda d: "subset=" in d.current_url)
    assert Select(browser.find_element(_by("ID"), "f-subset")).first_selected_option.text == SUBSETS[1]
    assert _text(browser, "count").startswith("0 cells")  # no human labels: nothing disagrees
    browser.find_element(_by("ID"), "f-disagree").click()
    browser.find_element(_by("CSS_SELECTOR"), ".filters button").click()
    wait_until(browser, lambda d: "disagree" not in d.current_url)
    assert _text(browser, "count").startswith("30 cells")
    rows = browser.find_elements(_by("CSS_SELECTOR"), "#cells tbody tr")
    assert len(rows) == 30 and all(f" {SUBSETS[1]} " in f" {r.text} " for r in rows)
    browser.find_element(_by("LINK_TEXT"), "BLEU-2").click()
    browser.find_element(_by("PARTIAL_LINK_TEXT"), "BLEU-2").click()  # again: descending
    header = browser.find_element(_by("CSS_SELECTOR"), "th[aria-sort]")
    assert header.get_attribute("aria-sort") == "descending" and "BLEU-2" in header.text
    values = [float(r.find_elements(_by("TAG_NAME"), "td")[8].text)
              for r in browser.find_elements(_by("CSS_SELECTOR"), "#cells tbody tr")]
    assert values == sorted(values, reverse=True) and len(values) == 30


@pytest.mark.parametrize("path", ["/label?rater=kb", "/"])
def test_pages_fit_a_phone_and_a_desktop(tmp_path, browser, servers, path):
    store = build_view_store(tmp_path / "s.duckdb", items=8)
    server = servers(store, "--unblind")
    _open(browser, server, path)
    try:
        for width, height in ((390, 844), (1280, 800)):
            browser.set_window_size(width, height)
            inner = browser.execute_script("return window.innerWidth")
            scroll = browser.execute_script("return document.documentElement.scrollWidth")
            assert scroll <= inner, (width, scroll, inner)
    finally:
        browser.set_window_size(1280, 800)
