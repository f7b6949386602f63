"""Any study's items: CSV, JSONL and Parquet, the
file's own column names through --map, optional title and subset, typed extra columns, one-line
refusals that write nothing, a file without end, and the reader below the emulator and the jobs."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from contam.harness.errors import InputError, UserError
from contam.harness.jobs.importing import import_file
from contam.harness.store import Store

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "own-items"
MAP = "item_id=id,question=prompt,reference=answer,subset=tier"
TABLES = ("items", "answers", "labels", "imports")


def counts(store):
    return {table: store.count(table) for table in TABLES}


def stored_items(store):
    return store.query("SELECT item_id, title, subset, question, reference, extra::VARCHAR "
                       "FROM latest_items ORDER BY item_id")


def write_parquet(path: Path, select_sql: str) -> Path:
    con = duckdb.connect()
    con.execute(f"COPY ({select_sql}) TO '{path}' (FORMAT parquet)")
    con.close()
    return path


# -- the worked example: the same items as JSONL and as Parquet, under their own names ----------

@pytest.mark.parametrize("name", ["items.jsonl", "items.parquet"])
def test_the_example_items_import_through_map_with_typed_extras(store, name):
    result = import_file(store, "items", EXAMPLE / name, column_map=MAP)
    assert (result.read, result.added) == (6, 6)
    rows = {row[0]: row for row in stored_items(store)}
    assert rows["py-03"][1:5] == (None, "obscure", "Which module provides the "
                                  "graphlib.TopologicalSorter class?", "graphlib")
    extra = json.loads(rows["py-01"][5])
    assert extra == {"library": "Python", "pages": 6.2, "tags": ["stdlib", "containers"]}
    types = dict(store.query("SELECT item_id, json_type(extra, '$.pages') FROM latest_items"))
    assert set(types.values()) == {"DOUBLE"}  # numbers stay numbers, in both formats


def test_jsonl_and_parquet_of_the_same_items_store_the_same_rows(tmp_path):
    stored = []
    for name in ("items.jsonl", "items.parquet"):
        with Store(tmp_path / f"{name}.duckdb", create=True) as store:
            import_file(store, "items", EXAMPLE / name, column_map=MAP)
            stored.append([row[:5] + (json.loads(row[5]),) for row in stored_items(store)])
    assert stored[0] == stored[1]


def test_cli_imports_parquet_with_map_and_again_adds_nothing(contam, store_path):
    args = ("import", "items", EXAMPLE / "items.parquet", "--map", MAP, "--store", store_path)
    status, out, _ = contam(*args)
    assert status == 0 and "6 items read, 6 added" in out
    status, out, _ = contam(*args)
    assert status == 0 and "6 items read, 0 added, 6 already in the store" in out


def test_the_import_records_the_sha256_of_the_bytes_it_parsed(store, tmp_path):
    for name in ("items.jsonl", "items.parquet"):
        import_file(store, "items", EXAMPLE / name, column_map=MAP)
        digest = hashlib.sha256((EXAMPLE / name).read_bytes()).hexdigest()
        assert store.query("SELECT sha256 FROM imports WHERE file = ?", [str(EXAMPLE / name)]) \
            == [(digest,)]


# -- title and subset are optional ----------------------------------------------------------------

def test_items_without_title_or_subset_are_stored_with_nulls(store, tmp_path):
    path = tmp_path / "items.csv"
    path.write_text("item_id,question,reference,pages\nq1,What is 2+2?,4,3\nq2,Capital of France?,"
                    "Paris,7\n", encoding="utf-8")
    assert import_file(store, "items", path).added == 2
    assert stored_items(store)[0] == ("q1", None, None, "What is 2+2?", "4", '{"pages":"3"}')
    assert import_file(store, "items", path).added == 0  # NULL title: the same row, not a new one


def test_a_missing_question_still_names_what_items_need(store, tmp_path):
    path = tmp_path / "items.csv"
    path.write_text("item_id,reference\nq1,4\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        import_file(store, "items", path)
    assert str(caught.value) == (f"{path}:1: missing required column 'question' (items need "
                                 "item_id, question, reference; title and subset optional)")


# -- bad input: one line, exit 2, nothing written ---------------------------------------------

def _refused_by_cli(contam, store_path, path, *extra):
    with Store(store_path, create=True) as store:
        before = counts(store)
    status, out, err = contam("import", "items", path, *extra, "--store", store_path)
    with Store(store_path) as store:
        assert counts(store) == before  # nothing from a refused file is written
    assert status == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    return err.strip()


@pytest.mark.parametrize("name", ["items.jsonl", "items.parquet"])
def test_a_map_naming_a_column_the_file_lacks_is_one_line(contam, store_path, name):
    err = _refused_by_cli(contam, store_path, EXAMPLE / name, "--map", "item_id=id,question=text")
    assert err.startswith(f"contam import: {EXAMPLE / name}")
    assert "--map names column 'text', which the file lacks (its columns: id, library, tier, " \
           "prompt, answer, pages, tags)" in err


def test_a_map_naming_a_column_a_csv_lacks_names_its_header(contam, store_path, tmp_path):
    path = tmp_path / "items.csv"
    path.write_text("id,prompt,answer\nq1,Q?,A\n", encoding="utf-8")
    err = _refused_by_cli(contam, store_path, path, "--map", "item_id=key,question=prompt")
    assert err == (f"contam import: {path}:1: --map names column 'key', which the file lacks "
                   "(its columns: id, prompt, answer)")


def test_a_map_onto_a_column_the_file_also_has_is_refused(contam, store_path, tmp_path):
    path = tmp_path / "items.csv"
    path.write_text("item_id,id,question,reference\nq1,k1,Q?,A\n", encoding="utf-8")
    err = _refused_by_cli(contam, store_path, path, "--map", "item_id=id")
    assert err.endswith("--map fills 'item_id' from 'id', but the file has a column 'item_id' too")


@pytest.mark.parametrize(("text", "problem"), [
    ("item_id", "--map: 'item_id' is not CONTAM_COLUMN=FILE_COLUMN"),
    ("answer=x", "--map: 'answer' is not a column of items (item_id, title, subset, question, "
                 "reference)"),
    ("item_id=a,item_id=b", "--map: 'item_id' is mapped twice"),
])
def test_a_malformed_map_is_one_line_before_the_store_opens(contam, tmp_path, text, problem):
    store_path = tmp_path / "never.duckdb"
    status, _, err = contam("import", "items", EXAMPLE / "items.jsonl", "--map", text,
                            "--store", store_path)
    assert status == 2 and err.startswith(f"contam import: {problem}") and err.count("\n") == 1
    assert not store_path.exists()


def test_a_nested_parquet_column_where_text_is_needed_is_one_line(contam, store_path, tmp_path):
    path = write_parquet(tmp_path / "nested.parquet",
                         "SELECT 'q1' AS id, ['a', 'b'] AS prompt, 'A' AS answer")
    err = _refused_by_cli(contam, store_path, path, "--map", "item_id=id,question=prompt,"
                          "reference=answer")
    assert err == (f"contam import: {path}: column 'question' is VARCHAR[], but contam reads "
                   "question as text: flatten it or --map another column onto it")
    struct = write_parquet(tmp_path / "struct.parquet", "SELECT 'q1' AS item_id, 'Q?' AS "
                           "question, {'text': 'A'} AS reference")
    assert "column 'reference' is STRUCT(" in _refused_by_cli(contam, store_path, struct)


def test_a_nested_parquet_extra_column_is_kept_as_json(store, tmp_path):
    path = write_parquet(tmp_path / "items.parquet",
                         "SELECT 'q1' AS item_id, 'Q?' AS question, 'A' AS reference, "
                         "{'n': 3, 'tags': ['x']} AS meta, 42 AS rank, true AS flag, "
                         "DATE '2024-06-30' AS released, 1.50::DECIMAL(4,2) AS price")
    import_file(store, "items", path)
    assert json.loads(stored_items(store)[0][5]) == {
        "meta": {"n": 3, "tags": ["x"]}, "rank": 42, "flag": True, "released": "2024-06-30",
        "price": 1.5}


def test_a_blank_parquet_question_names_its_row(contam, store_path, tmp_path):
    path = write_parquet(tmp_path / "items.parquet", "SELECT * FROM (VALUES ('q1', 'Q?', 'A'), "
                         "('q2', 'Q2?', 'B'), ('q3', ' ', 'C')) t(item_id, question, reference)")
    assert _refused_by_cli(contam, store_path, path) == f"contam import: {path}:3: empty question"


def test_a_file_that_is_not_parquet_is_one_line(contam, store_path, tmp_path):
    path = tmp_path / "items.parquet"
    path.write_text("item_id,question,reference\n", encoding="utf-8")
    err = _refused_by_cli(contam, store_path, path)
    assert err.startswith(f"contam import: {path}: not a readable Parquet file (")


def test_typed_jsonl_values_keep_their_json_type(store, tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps({"item_id": 7, "question": "Q?", "reference": 12.5, "year": 1996,
                                "ok": False, "none": None}) + "\n", encoding="utf-8")
    import_file(store, "items", path)
    row = stored_items(store)[0]
    assert row[0] == "7" and row[4] == "12.5"  # contam's own columns are text
    assert json.loads(row[5]) == {"year": 1996, "ok": False, "none": None}


# -- a file without end --------------------------------------------------------

def test_dev_urandom_as_jsonl_is_refused_instead_of_hashed_for_ever(tmp_path):
    """Hashed whole before parsing, /dev/urandom never returned; hashed while parsed, it is
    refused at its first bad line. (The timeout only keeps a regression from hanging the suite.)"""
    endless = tmp_path / "urandom.jsonl"
    endless.symlink_to("/dev/urandom")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "contam.harness.cli", "import", "items", str(endless),
                           "--store", str(tmp_path / "s.duckdb")], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith(f"contam import: {endless}:")
    assert done.stderr.count("\n") == 1


# -- the file-format reader lives below the jobs and the emulator -------------

def test_the_emulator_reads_items_without_importing_a_job():
    emulator = {path.name: path.read_text(encoding="utf-8")
                for path in (ROOT / "harness" / "emulator").glob("*.py")}
    assert not [name for name, text in emulator.items() if "contam.harness.jobs" in text]
    assert "contam.harness.store.record_file" in emulator["items.py"]  # the emulator's items reader
    done = subprocess.run([sys.executable, "scripts/check_layers.py"], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0 and "0 circles, 0 upward imports" in done.stdout


def test_bad_map_errors_are_user_errors(store):
    with pytest.raises(UserError):
        import_file(store, "items", EXAMPLE / "items.jsonl", column_map="oops")


def test_the_emulator_knows_items_from_a_parquet_file(tmp_path):
    from contam.harness.emulator.knowledge import Knowledge

    path = write_parquet(tmp_path / "items.parquet", "SELECT * FROM read_csv('"
                         f"{EXAMPLE / 'items-contam.csv'}')")
    known = Knowledge.from_file(path)
    assert sorted(item.item_id for item in known.items) == sorted(
        json.loads(line)["id"] for line in (EXAMPLE / "items.jsonl").read_text().splitlines())
