"""`contam view`'s browse page filters by an item's own extra column: the same
cells the `cells` view's `fields` column selects, any key (a JSON pointer, never SQL text), typed
values matched as written, and the form offers the store's fields."""

from __future__ import annotations

import re

import pytest

from contam.harness.jobs.importing import import_file
from contam.harness.store import Store, utc_now
from contam.harness.store.access import reading
from contam.harness.view.browse import BrowseQuery, browse
from tests.ownitemskit import EXAMPLE, MAP
from tests.viewkit import view_client

MODELS = ("m-a", "m-b")


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fields")
    path = folder / "f.duckdb"
    odd = folder / "odd.jsonl"
    odd.write_text('{"item_id": "odd-1", "question": "Q?", "reference": "A", "x/y~z": "k"}\n',
                   encoding="utf-8")
    with Store(path, create=True) as store:
        import_file(store, "items", EXAMPLE / "items.jsonl", column_map=MAP)
        import_file(store, "items", odd)
        items = [row[0] for row in store.query("SELECT item_id FROM latest_items")]
        store.append("answers", [{"item_id": item, "model": model, "answer": "x", "answer_raw": "x",
                                  "created_at": utc_now()} for item in items for model in MODELS])
    view_client(path)  # migrates
    return path


def _cells(path, query: BrowseQuery) -> set[tuple[str, str]]:
    with reading(path) as store:
        page = browse(store, query)
        assert page.total == len(page.rows)  # one page holds them all here
        return {(row["item_id"], row["model"]) for row in page.rows}


def _expected(path, where: str) -> set[tuple[str, str]]:
    with Store(path, read_only=True) as store:
        return {tuple(r) for r in store.query(f"SELECT item_id, model FROM cells WHERE {where}")}


@pytest.mark.parametrize(("query", "where"), [
    (BrowseQuery(field="library", value="Python"), "fields->>'library' = 'Python'"),
    (BrowseQuery(field="library", value="JavaScript", subset="obscure"),
     "fields->>'library' = 'JavaScript' AND subset = 'obscure'"),
    (BrowseQuery(field="pages", value="6.2"), "fields->>'pages' = '6.2'"),
    (BrowseQuery(field="tags"), "fields->>'tags' IS NOT NULL"),
    (BrowseQuery(field="x/y~z", value="k"), "item_id = 'odd-1'"),
    (BrowseQuery(field="library", value="Rust"), "false"),
])
def test_a_field_filter_selects_what_the_cells_view_says(path, query, where):
    expected = _expected(path, where)
    assert _cells(path, query) == expected
    assert expected or query.value == "Rust"


def test_the_page_offers_the_fields_and_keeps_the_filter(path):
    client = view_client(path)
    page = client.get("/?field=library&value=JavaScript").text
    assert '<option value="library" selected>' in page and '<option value="x/y~z">' in page
    assert re.search(r'<p id="count">6 cells', page)
    assert 'name="value" value="JavaScript"' in page
    hostile = client.get("/", params={"field": "library", "value": '"><script>x</script>'}).text
    assert "<script>x</script>" not in hostile and re.search(r'<p id="count">0 cells', hostile)


def test_the_query_round_trips_through_its_url_parameters():
    query = BrowseQuery.from_params({"field": "pages", "value": "6.2", "model": "m-a"})
    assert query.params() == {"field": "pages", "value": "6.2", "model": "m-a"}
    assert BrowseQuery.from_params(query.params()) == query
