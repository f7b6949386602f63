"""Provenance sufficient to reproduce — every imported file's name and sha256
(migration 7's ``imports`` table), the software versions and the bootstrap's seed, and a metric
whose every score is NULL counted as such."""

from __future__ import annotations

import builtins
import hashlib
import sys
from importlib import metadata

import duckdb
import orjson
import pytest

from contam.harness.errors import InputError
from contam.harness.jobs.importing import import_file
from contam.harness.report.statistics import named_tests as stats
from contam.harness.report.parts.provenance import provenance, software_versions
from contam.harness.store import Store, utc_now
from tests.test_import import ANSWERS, ITEMS, LABELS, write_csv, write_jsonl
from tests.test_store import old_store


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_import_records_its_file_name_and_sha256(store, tmp_path):
    files = {"items": write_csv(tmp_path / "items.csv", ITEMS),
             "answers": write_jsonl(tmp_path / "answers.jsonl", ANSWERS),
             "labels": write_csv(tmp_path / "labels.csv", LABELS)}
    for kind, path in files.items():
        import_file(store, kind, path)
    import_file(store, "items", files["items"])  # again: nothing added, but the read is on record
    rows = store.query("SELECT kind, file, sha256, bytes, rows, added FROM imports ORDER BY seq")
    assert rows == [
        ("items", str(files["items"]), sha256(files["items"]), files["items"].stat().st_size, 2, 2),
        ("answers", str(files["answers"]), sha256(files["answers"]), files["answers"].stat().st_size, 2, 2),
        ("labels", str(files["labels"]), sha256(files["labels"]), files["labels"].stat().st_size, 3, 3),
        ("items", str(files["items"]), sha256(files["items"]), files["items"].stat().st_size, 2, 0)]


def test_a_refused_file_leaves_no_import_record(store, tmp_path):
    import_file(store, "items", write_csv(tmp_path / "items.csv", ITEMS))
    bad = write_csv(tmp_path / "bad.csv", [{**ANSWERS[0], "item_id": "no-such-item"}])
    with pytest.raises(InputError):
        import_file(store, "answers", bad)
    assert store.query("SELECT file FROM imports") == [(str(tmp_path / "items.csv"),)]


def test_report_names_files_hashes_versions_seed_and_non_null_scores(tmp_path, contam):
    path = tmp_path / "s.duckdb"
    items, answers = write_csv(tmp_path / "items.csv", ITEMS), write_csv(tmp_path / "answers.csv", ANSWERS)
    for kind, file in (("items", items), ("answers", answers)):
        assert contam("import", kind, file, "--store", path)[0] == 0
    with Store(path) as store:  # one metric scored, one whose every score is NULL
        store.append("scores", [{"item_id": r["item_id"], "model": "m1", "metric": metric, "value": value,
                                 "created_at": utc_now()}
                                for r in ITEMS for metric, value in (("bleu2", 0.5), ("bertscore_f1", None))])
    status, out, _ = contam("report", "--store", path, "--format", "json")
    prov = orjson.loads(out)["provenance"]
    assert status == 0
    assert [(r["kind"], r["file"], r["sha256"]) for r in prov["imports"]] == [
        ("items", str(items), sha256(items)), ("answers", str(answers), sha256(answers))]
    assert prov["unhashed_sources"] == []
    for name in ("numpy", "scipy", "statsmodels", "duckdb", "torch", "bert-score"):
        assert prov["software"][name] == metadata.version(name)
    assert prov["software"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert prov["bootstrap"] == {"method": "BCa", "resamples": stats.BOOTSTRAP_RESAMPLES,
                                 "seed": stats.BOOTSTRAP_SEED}
    assert {s["metric"]: (s["scores"], s["non_null"]) for s in prov["scoring"]} == {
        "bleu2": (2, 2), "bertscore_f1": (2, 0)}
    status, md, _ = contam("report", "--store", path, "--format", "md")
    section = md.split("## Provenance")[1]
    assert sha256(items) in section and sha256(answers) in section and md_name(items) in section
    assert f"statsmodels {metadata.version('statsmodels')}" in section and f"seed {stats.BOOTSTRAP_SEED}" in section
    assert "| bertscore_f1 | 2 | 0 |" in section  # an underscore inside a word is no emphasis


def md_name(path) -> str:
    from contam.harness.report.texts.format import md_cell

    return md_cell(str(path))


def test_versions_are_read_without_importing_torch(monkeypatch):
    """Any import of torch or bert_score during the call fails the test (torch alone takes seconds)."""
    real_import = builtins.__import__

    def guarded(name, *args, **kwargs):
        assert not name.startswith(("torch", "bert_score")), f"imported {name}"
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", guarded)
    versions = software_versions()
    monkeypatch.undo()
    assert versions["torch"] == metadata.version("torch") and versions["bert-score"] == metadata.version("bert-score")


def test_a_store_from_before_migration_7_names_its_unhashed_files(tmp_path):
    path = old_store(tmp_path / "old.duckdb", range(1, 7))
    with duckdb.connect(str(path)) as con:
        con.execute("INSERT INTO items (item_id, title, subset, source_file) VALUES ('a', 't', 'x', 'old.csv')")
    with Store(path, read_only=True) as store:  # migrated first: an empty imports table
        prov = provenance(store)
    assert prov["imports"] == [] and prov["unhashed_sources"] == ["old.csv"]
