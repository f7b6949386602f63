"""The label desk and the browse filters in a real browser: keys
pressed faster than labels are saved are all applied, in order; a finished desk leads onwards
and offers no Undo, Skip or Note; the filter form leaves its empty fields out of the URL."""

from __future__ import annotations

import pytest

from contam.harness.store import Store
from contam.harness.view.queue import order_key
from tests.browserkit import ViewServer, wait_until
from tests.viewkit import MODELS, SUBSETS, build_view_store

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def server(tmp_path):
    store = build_view_store(tmp_path / "desk.duckdb", items=6)
    with ViewServer(store, "--seed", "11") as started:
        yield started


def _by(kind: str):
    from selenium.webdriver.common.by import By

    return getattr(By, kind)



def _press(driver, keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(keys).perform()  # one after another, a few ms apart


def _progress(driver) -> str:
    return driver.find_element(_by("ID"), "progress-text").text


def test_keys_pressed_ahead_are_all_saved_in_order_and_the_done_desk_leads_on(browser, server):
    browser.get(server.url)
    browser.get(server.base + "/label?rater=quick")
    _press(browser, "1231231")  # seven keys at once: most arrive while a label is being saved
    wait_until(browser, lambda d: _progress(d).startswith("7 / 12"))
    _press(browser, "23123")  # and the last five
    wait_until(browser, lambda d: _progress(d) == "12 / 12 · all done")
    order = sorted(((f"it{n:03d}", m) for n in range(6) for m in MODELS),
                   key=lambda key: order_key(11, *key))
    names = {"1": "right", "2": "partial", "3": "wrong"}
    with Store(server.store, read_only=True) as store:
        stored = store.query("SELECT item_id, model, label FROM labels "
                             "WHERE rater = 'human:quick' ORDER BY seq")
    assert stored == [(*key, names[k]) for key, k in zip(order, "123123123123")]
    done = browser.find_element(_by("ID"), "done-msg")
    assert done.is_displayed() and "All your cells are labelled" in done.text
    assert done.find_element(_by("LINK_TEXT"), "Label as another rater").is_displayed()
    for action in ("undo", "skip", "note"):
        button = browser.find_element(_by("CSS_SELECTOR"), f'[data-action="{action}"]')
        assert not button.is_displayed(), action
    _press(browser, "u")  # no undo on a finished desk
    assert _progress(browser) == "12 / 12 · all done"


def test_the_filter_form_leaves_empty_fields_out_of_the_url(browser, server):
    from selenium.webdriver.support.ui import Select

    browser.get(server.url)
    browser.get(server.base + "/")
    Select(browser.find_element(_by("ID"), "f-subset")).select_by_value(SUBSETS[0])
    browser.find_element(_by("CSS_SELECTOR"), "form.filters button[type=submit]").click()
    wait_until(browser, lambda d: "subset=" in d.current_url)
    assert browser.current_url == f"{server.base}/?subset={SUBSETS[0]}"
    assert "6 cells" in browser.find_element(_by("ID"), "count").text
