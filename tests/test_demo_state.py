"""`contam demo` run again: it knows from the store's state whether the report it left is still
the report of this store, so a rerun with nothing new skips scoring and reporting."""

from __future__ import annotations

from contam.harness.jobs import demo_state
from contam.harness.jobs.demo_state import remember_report, unchanged_since_last_report
from contam.harness.store import Store


def _answer(store: Store, item: str) -> None:
    store.append("answers", [{"item_id": item, "model": "m", "answer": "a"}])


def test_the_report_is_up_to_date_until_a_row_is_added(tmp_path):
    out = tmp_path / "demo"
    out.mkdir()
    with Store(out / "contam.duckdb", create=True) as store:
        _answer(store, "i1")
        assert not unchanged_since_last_report(store, out, probes=False)  # never reported
        (out / "report.json").write_text("{}")
        remember_report(store, out, probes=False)
        assert unchanged_since_last_report(store, out, probes=False)
        store.append("imports", [{"kind": "items", "file": "items.csv", "sha256": "0" * 64,
                                  "bytes": 1, "rows": 1, "added": 0}])
        assert unchanged_since_last_report(store, out, probes=False)  # an import log line only
        assert not unchanged_since_last_report(store, out, probes=True)  # --probes adds a section
        _answer(store, "i2")
        assert not unchanged_since_last_report(store, out, probes=False)


def test_another_contam_version_or_a_missing_report_means_writing_it_again(tmp_path, monkeypatch):
    out = tmp_path / "demo"
    out.mkdir()
    (out / "report.json").write_text("{}")
    with Store(out / "contam.duckdb", create=True) as store:
        remember_report(store, out, probes=False)
        monkeypatch.setattr(demo_state, "__version__", "0.0.0-other")
        assert not unchanged_since_last_report(store, out, probes=False)
        monkeypatch.undo()
        (out / "report.json").unlink()
        assert not unchanged_since_last_report(store, out, probes=False)
        (out / demo_state.STATE_NAME).write_text("not json")
        assert not unchanged_since_last_report(store, out, probes=False)
