"""Every <dt> and <dd> the view serves sits in a <dl> (directly, or in a <div> of one), which is
what axe-core's `dlitem` rule asks, on every page that shows a cell's scores and labels, with the
richest cell a store can hold (no title, rule metrics, two judges, a note, a withdrawn label, a
label just saved on the page). view.js inserts no <dt> or <dd> at run time; the browser test
(tests/test_view_browser_pages.py) runs axe itself on the same cell."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from tests.viewkit import RICH_CELL, add_rich_cell, build_view_store, view_client

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class _DefinitionItems(HTMLParser):
    """Each <dt>/<dd> with the elements open around it, innermost last."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.items: list[tuple[str, tuple[str, ...]]] = []

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in ("dt", "dd"):
            self.items.append((tag, tuple(self.open)))
        if tag not in VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.open:
            del self.open[len(self.open) - 1 - self.open[::-1].index(tag):]


def _misplaced(html: str) -> list[tuple[str, tuple[str, ...]]]:
    parser = _DefinitionItems()
    parser.feed(html)
    return [(tag, around) for tag, around in parser.items
            if not (around[-1:] == ("dl",) or around[-2:] == ("dl", "div"))], parser.items


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    store = add_rich_cell(build_view_store(tmp_path_factory.mktemp("dl") / "s.duckdb", items=4))
    with view_client(store) as opened:
        yield opened


def test_the_cell_page_of_the_richest_cell_keeps_every_dt_and_dd_in_its_list(client):
    item, model = RICH_CELL
    page = client.get(f"/cell?item={item}&model={model}")
    assert page.status_code == 200
    misplaced, items = _misplaced(page.text)
    assert len(items) == 2 * 7  # 5 scores, 2 judges: a term and its value each
    assert misplaced == []


def test_after_a_label_is_saved_on_the_cell_page_it_still_does(client):
    item, model = RICH_CELL
    saved = client.post("/api/cell-label", json={"item": item, "model": model,
                                                 "rater": "human:cy", "label": "partial",
                                                 "note": "half of it"})
    assert saved.status_code == 200, saved.text
    page = client.get(f"/cell?item={item}&model={model}").text
    assert "human:cy" in page and "half of it" in page
    assert _misplaced(page)[0] == []


def test_the_unblinded_label_desk_keeps_them_in_its_list_too(tmp_path):
    store = add_rich_cell(build_view_store(tmp_path / "s.duckdb", items=4))
    with view_client(store, unblind=True) as client:
        page = client.get("/label?rater=kb")
    misplaced, items = _misplaced(page.text)
    assert len(items) == 2 * 6 and misplaced == []  # model, subset, item, two scores, judge


def test_the_check_finds_a_term_outside_a_list():
    assert _misplaced("<dl><div><dt>a</dt><dd>1</dd></div></dl>")[0] == []
    assert [tag for tag, _ in _misplaced("<div><dt>a</dt><dd>1</dd></div>")[0]] == ["dt", "dd"]
    assert len(_misplaced("<dl><section><dt>a</dt></section></dl>")[0]) == 1
