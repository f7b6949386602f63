"""The browse query against the `cells` view it must agree with, the page's filters, sorting and
paging, the colours' contrast (WCAG AA), and `contam view`'s refusals on the command line."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from contam.harness.store import Store, utc_now
from contam.harness.store.access import reading
from contam.harness.view.browse import PAGE_SIZE, BrowseQuery, browse
from tests.viewkit import JUDGE, MODELS, SUBSETS, build_view_store, view_client

ROOT = Path(__file__).resolve().parents[1]
CSS = ROOT / "harness" / "view" / "static" / "view.css"
LAYOUT_CSS = ROOT / "harness" / "report" / "templates" / "layout.css"  # linked before view.css


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    """60 items x 2 models with two human raters, one of them retracting a label."""
    path = build_view_store(tmp_path_factory.mktemp("browse") / "b.duckdb", items=60)
    labels = [{"item_id": f"it{n:03d}", "model": m, "rater": rater,
               "label": ("right", "partial", "wrong")[(n + k + len(rater)) % 3], "created_at": utc_now()}
              for n in range(0, 60, 2) for k, m in enumerate(MODELS)
              for rater in ("human:ann", "human:benedict")]
    with Store(path) as store:
        store.append("labels", labels)
        store.append("labels", [{"item_id": "it000", "model": MODELS[0], "rater": "human:ann",
                                 "label": labels[0]["label"], "retracted": True}])
    view_client(path)  # migrates
    return path


def _all_pages(store, query: BrowseQuery) -> tuple[int, list[dict]]:
    first = browse(store, query)
    rows = list(first.rows)
    for page in range(2, first.pages + 1):
        rows += browse(store, BrowseQuery(**{**query.__dict__, "page": page})).rows
    return first.total, rows


def _expected(store, where: str, params: dict | None = None) -> set[tuple[str, str]]:
    """The same filter written against the cells view and latest_labels."""
    return {tuple(r) for r in store.query(f"SELECT item_id, model FROM cells c WHERE {where}", params)}


@pytest.mark.parametrize("query, where", [
    (BrowseQuery(), "true"),
    (BrowseQuery(subset=SUBSETS[1]), f"subset = '{SUBSETS[1]}'"),
    (BrowseQuery(title="Game 2", model=MODELS[1]), f"title = 'Game 2' AND model = '{MODELS[1]}'"),
    (BrowseQuery(label="partial"), "EXISTS (SELECT 1 FROM latest_labels l WHERE l.item_id = c.item_id "
     "AND l.model = c.model AND l.rater LIKE 'human%' AND l.label = 'partial')"),
    (BrowseQuery(label="none", rater="human:ann"), "NOT EXISTS (SELECT 1 FROM latest_labels l WHERE "
     "l.item_id = c.item_id AND l.model = c.model AND l.rater = 'human:ann')"),
    (BrowseQuery(disagree=True, rater="human:benedict"), "EXISTS (SELECT 1 FROM latest_labels l WHERE "
     "l.item_id = c.item_id AND l.model = c.model AND l.rater = 'human:benedict' "
     "AND l.label <> c.judge_label)"),
    (BrowseQuery(disagree=True), "EXISTS (SELECT 1 FROM latest_labels l WHERE l.item_id = c.item_id "
     "AND l.model = c.model AND l.rater LIKE 'human:%' AND l.label <> c.judge_label)"),
])
def test_each_filter_selects_what_the_cells_view_says(path, query, where):
    with reading(path) as store:
        total, rows = _all_pages(store, query)
        expected = _expected(store, where)
    assert total == len(expected) == len(rows)
    assert {(r["item_id"], r["model"]) for r in rows} == expected


def test_rows_carry_the_views_labels_scores_and_answers(path):
    with reading(path) as store:
        _, rows = _all_pages(store, BrowseQuery())
        cells = {(r["item_id"], r["model"]): r for r in store.query_dicts("SELECT * FROM cells")}
        ann = dict(((i, m), l) for i, m, l in store.query(
            "SELECT item_id, model, label FROM latest_labels WHERE rater = 'human:ann'"))
    for row in rows:
        cell = cells[(row["item_id"], row["model"])]
        assert (row["answer"], row["judge_label"], row["bleu2"], row["bertscore_f1"], row["title"]) == \
            (cell["answer"], cell["judge_label"], cell["bleu2"], cell["bertscore_f1"], cell["title"])
        if (row["item_id"], row["model"]) in ann:
            assert f"ann: {ann[(row['item_id'], row['model'])]}" in row["human_labels"]
    retracted = next(r for r in rows if (r["item_id"], r["model"]) == ("it000", MODELS[0]))
    assert retracted["human_labels"].startswith("benedict:")  # ann's label there was retracted


@pytest.mark.parametrize("sort", ["bleu2", "bertscore_f1", "model", "answer", "human", "judge", "title"])
def test_sorting_by_any_column_orders_every_page(path, sort):
    key = {"human": "human_labels", "judge": "judge_label"}.get(sort, sort)
    with reading(path) as store:
        _, rows = _all_pages(store, BrowseQuery(sort=sort, desc=True))
    values = [r[key] for r in rows if r[key] is not None]
    if sort == "human":  # by what the labels say (wrong 0, partial 0.5, right 1), not by the text
        values = [_human_score(text) for text in values]
    assert values == sorted(values, reverse=True) and len(values) > 1
    assert all(r[key] is None for r in rows[len(values):])  # unknowns last


def _human_score(text: str) -> float:
    """The mean label of ``ann: partial, benedict: right`` on wrong 0, partial 0.5, right 1."""
    labels = [part.split(": ")[1] for part in text.split(", ")]
    return sum({"right": 1.0, "partial": 0.5, "wrong": 0.0}[label] for label in labels) / len(labels)


def test_the_page_count_of_a_page_past_the_end_names_the_last_page(path):
    client = view_client(path)
    page = client.get("/?page=99").text
    assert "page 3 of 3" in page and "page 99" not in page


def test_browse_shows_each_cells_reference_and_sorts_by_it(path):
    client = view_client(path)
    page = client.get("/?sort=reference&desc=1").text
    assert ">Reference" in page
    shown = re.findall(r"<td [^>]*class=\"answer\">(Reference \d+\.)</td>", page)
    assert shown and shown == sorted(shown, reverse=True)


def test_pages_are_cut_on_the_server_and_a_page_past_the_end_is_the_last(path):
    with reading(path) as store:
        first = browse(store, BrowseQuery())
        beyond = browse(store, BrowseQuery(page=99))
        nothing = browse(store, BrowseQuery(title="no such title", page=3))
    assert (first.total, first.pages, len(first.rows)) == (120, 3, PAGE_SIZE)
    assert beyond.query.page == 3 and len(beyond.rows) == 120 - 2 * PAGE_SIZE
    assert nothing.total == 0 and nothing.rows == []


def test_the_browse_page_offers_the_filters_and_sort_links(path):
    client = view_client(path)
    page = client.get(f"/?model={MODELS[0]}&label=wrong&rater=human:ann&sort=bleu2&desc=1").text
    assert re.search(r'<option value="human:benedict"', page)
    assert f'<option value="{MODELS[0]}" selected>' in page
    assert 'aria-sort="descending"' in page
    total = re.search(r'<p id="count">([\d,]+) cell', page).group(1)
    with reading(path) as store:
        assert int(total) == browse(store, BrowseQuery(model=MODELS[0], label="wrong",
                                                        rater="human:ann")).total
    assert JUDGE not in page  # the judge's column shows labels, not the rater's name


# -- colours ------------------------------------------------------------------------------------

def _luminance(colour: str) -> float:
    channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    """WCAG 2.x contrast ratio of two #rrggbb colours."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_contrast_is_computed_as_wcag_defines_it():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)


def test_every_colour_pair_the_stylesheet_uses_meets_wcag_aa():
    own = CSS.read_text()
    css = LAYOUT_CSS.read_text() + own  # what the page gets, in the order it links them
    colours = dict(re.findall(r"(--[\w-]+):\s*(#[0-9a-fA-F]{6});", css))
    pairs = re.findall(r"(--[\w-]+) on (--[\w-]+)", own.split("*/", 1)[0])
    assert len(pairs) >= 14
    for fg, bg in pairs:
        needed = 3.0 if fg == "--focus" else 4.5
        assert contrast(colours[fg], colours[bg]) >= needed, (fg, bg)
    # every text colour the stylesheet sets is one of the checked foregrounds
    used = set(re.findall(r"(?<![-\w])color:\s*var\((--[\w-]+)\)", css))
    assert used <= {fg for fg, _ in pairs}, used - {fg for fg, _ in pairs}


# -- the command line ---------------------------------------------------------------------------

def test_contam_view_refuses_bad_arguments_in_one_line(tmp_path, contam):
    store = build_view_store(tmp_path / "s.duckdb", items=2)
    status, _, err = contam("view", "--store", store, "--overlap", "0.2")
    assert status == 2 and err.strip() == ("contam view: --overlap needs --raters with two or more "
                                           "names (without --raters every rater labels every cell "
                                           "already)")
    status, _, err = contam("view", "--store", tmp_path / "missing.duckdb")
    assert status == 2 and "missing.duckdb: no such store" in err and len(err.splitlines()) == 1
    status, _, err = contam("view", "--store", store, "--raters", "alice,bad name")
    assert status == 2 and "rater 'bad name'" in err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status, _, err = contam("view", "--store", store, "--port", port)
    assert status == 2 and f"cannot listen on 127.0.0.1:{port}" in err


def test_a_busy_port_says_to_choose_another_with_port(contam, tmp_path):
    store = build_view_store(tmp_path / "s.duckdb", items=2)
    with socket.socket() as taken:  # what a first `contam view` holds
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status, _, err = contam("view", "--store", store, "--port", port)
    assert status == 2 and len(err.splitlines()) == 1
    assert "(a second `contam view`?): choose one with --port N, or --port 0" in err


def test_without_the_browser_its_tests_skip_and_under_ci_they_fail(monkeypatch, tmp_path):
    import tests.browserkit as kit

    monkeypatch.setattr(kit, "CHROMEDRIVER", tmp_path / "chromedriver")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="chromedriver missing"):
        kit.require_browser()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="browser tests cannot run: .*chromedriver missing"):
        kit.require_browser()
