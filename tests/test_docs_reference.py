"""The generated reference pages (tests.docs_reference) are current: docs/reference/store.md is what
a fresh store holds, with a meaning for every table and view, and docs/reference/report-json.md
gives an entry for every key a report has. Regenerate with `python -m tests.docs_reference`."""

from __future__ import annotations

import pytest

from contam.harness.report.model import JSON_KEYS
from tests import docs_reference as ref


@pytest.fixture(scope="module")
def paper_report():
    return ref.paper_report()


def test_the_store_reference_is_what_a_fresh_store_holds():
    assert ref.STORE_PAGE.read_text(encoding="utf-8") == ref.store_page(), \
        "docs/reference/store.md is stale: run python -m tests.docs_reference"


def test_every_table_and_view_of_a_fresh_store_has_a_meaning():
    assert ref.undescribed_relations() == []


def test_a_table_without_a_meaning_is_named(monkeypatch):
    monkeypatch.setattr(ref, "architecture_tables", lambda: {})
    assert {"answers", "items", "latest_answers"} <= set(ref.undescribed_relations())


def test_the_report_json_reference_is_current(paper_report):
    assert ref.REPORT_PAGE.read_text(encoding="utf-8") == ref.report_page(paper_report), \
        "docs/reference/report-json.md is stale: run python -m tests.docs_reference"


def test_every_key_of_a_report_has_an_entry(paper_report):
    assert set(paper_report) <= set(ref.REPORT_KEYS), sorted(set(paper_report) - set(ref.REPORT_KEYS))


def test_every_key_the_report_can_have_has_an_entry_and_every_entry_a_key():
    """The keys beside the main sections (study parts, rule metrics, without subsets) appear only
    with some studies; the Report's fields are every key report.json can have."""
    assert set(JSON_KEYS) == set(ref.REPORT_KEYS)
