"""The view's report page through Starlette's TestClient: which human rater it
reports on and how many cells that rater labelled, the default rater (the one that labelled the
most cells), a judge-less store's line, the page while the report is built, and the view's layout
around it. Its width and axe's verdict need a browser: tests/test_view_report_browser.py."""

from __future__ import annotations

import re

import pytest

from contam.harness.report.model import Report
from contam.harness.report.analysis import build_report
from contam.harness.store import Store
from contam.harness.view.reporting import rater_sides
from tests.viewkit import JUDGE, MODELS, SUBSETS, build_view_store, report_page, view_client

CONTRAST = f"contrast={','.join(SUBSETS)}"
LINE = ("Human rater: human:bob, 20 of 24 cells; others: human:adjudicated (3), human:alice (10). "
        f"Judge: {JUDGE}, 24 of 24 cells.")
COVERAGE = {"human:bob": 20, "human:alice": 10, "human:adjudicated": 3}  # of 12 items x 2 models


def add_raters(path, coverage=COVERAGE) -> None:
    """Each rater labels its first N cells (items in order, both models each)."""
    cells = [(f"it{n:03d}", m) for n in range(12) for m in MODELS]
    with Store(path) as store:
        store.append("labels", [{"item_id": i, "model": m, "rater": rater,
                                 "label": ("right", "wrong")[k % 2]}
                                for rater, count in coverage.items()
                                for k, (i, m) in enumerate(cells[:count])])


@pytest.fixture(scope="module")
def raters_store(tmp_path_factory):
    path = build_view_store(tmp_path_factory.mktemp("raters") / "raters.duckdb", items=12)
    add_raters(path)
    return path


@pytest.fixture(scope="module")
def served(raters_store):
    """The client, its first answer for the report (while it builds) and the built page."""
    client = view_client(raters_store)
    first = client.get(f"/report?{CONTRAST}")
    return client, first, report_page(client, f"/report?{CONTRAST}")


def test_the_default_human_rater_is_the_one_that_labelled_the_most_cells(raters_store):
    with Store(raters_store, read_only=True) as store:
        report = build_report(store, contrast=SUBSETS)
    assert report.human_rater == "human:bob"  # not human:adjudicated, first by name
    assert report.meta["cells"] == 24
    assert report.meta["raters"] == {"human": {"human:adjudicated": 3, "human:alice": 10,
                                                  "human:bob": 20},
                                        "judge": {JUDGE: 24}}
    note = next(n.reason for n in report.notes if n.section == "human_rater")
    assert "accuracy uses 'human:bob', the one with most labels" in note


def test_the_report_page_names_the_rater_and_its_coverage_first(served):
    main = served[2].text.split('<main id="main">', 1)[1]
    assert main.lstrip().startswith('<link rel="stylesheet" href="/report.css">')
    first = main.split('id="report-raters">', 1)[1].split("</p>", 1)[0]
    assert re.sub(r"<[^>]+>", "", first) == LINE
    assert (f'<a href="/report?human=human%3Aalice&amp;contrast={SUBSETS[0]}%2C{SUBSETS[1]}">human:alice</a>'
            in first)  # each other rater's report, one click away


def test_a_rater_asked_for_is_the_one_named(raters_store):
    page = report_page(view_client(raters_store), f"/report?{CONTRAST}&human=human:alice").text
    assert ("Human rater: human:alice, 10 of 24 cells; others: human:adjudicated (3), human:bob (20)."
            in re.sub(r"<[^>]+>", "", page))


def test_without_a_judge_or_human_labels_the_line_says_none_not_None():
    report = Report(meta={"cells": 8, "raters": {"human": {}, "judge": {}}})
    assert [(side.head, side.others) for side in rater_sides(report, {})] == [
        ("Human rater: none (no human labels in this store)", ()),
        ("Judge: none (no judge labels in this store)", ())]


def test_the_page_says_it_is_building_then_shows_the_report_in_the_views_layout(served):
    client, building, page = served
    assert building.status_code == 202
    assert 'role="status"' in building.text and "Building the report…" in building.text
    assert '<script src="/static/report_wait.js" defer></script>' in building.text
    assert page.status_code == 200 and page.text.count("<main") == 1
    assert '<nav aria-label="Pages">' in page.text and '<a href="/agree">Agreement</a>' in page.text
    assert page.text.count('class="scroll" tabindex="0" role="region"') >= 3  # every table
    assert client.get(f"/report?{CONTRAST}").status_code == 200  # built once, then served
    css = client.get("/report.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert ".report figure img" in css.text
    assert client.get("/static/report_wait.js").status_code == 200
