"""`contam sql`: read-only queries in three formats, one-line errors."""

from __future__ import annotations

import json

import pytest

from contam.harness.store import Store


@pytest.fixture
def filled(store_path):
    with Store(store_path, create=True) as store:
        store.append("answers", [{"item_id": f"i{n}", "model": "m", "answer": f"a {n}"}
                                 for n in range(3)])
    return store_path


def test_csv_and_json_formats(contam, filled):
    status, out, _ = contam("sql", "--store", filled, "--format", "csv",
                            "select item_id, answer from latest_answers order by item_id")
    assert status == 0 and out.splitlines() == ["item_id,answer", "i0,a 0", "i1,a 1", "i2,a 2"]
    status, out, _ = contam("sql", "--store", filled, "--format", "json",
                            "select count(*) as n from cells")
    assert json.loads(out) == [{"n": 3}]


def test_table_format_shows_values(contam, filled):
    status, out, err = contam("sql", "--store", filled, "select model, count(*) from cells group by 1")
    assert status == 0 and "m" in out and "3" in out and "1 row" in err


def test_a_bad_query_keeps_duckdbs_whole_message(contam, filled):
    status, _, err = contam("sql", "--store", filled, "select * from cell")
    assert status == 2 and err.startswith("contam sql: query failed: Catalog Error")
    assert 'Did you mean "cells"?' in err and "LINE 1: select * from cell" in err and "^^^^" in err
    status, _, err = contam("sql", "--store", filled, "select item_idd from items")
    assert status == 2 and "Candidate bindings" in err and "item_id" in err
    assert "Traceback" not in err


def test_writes_are_refused(contam, filled):
    status, _, err = contam("sql", "--store", filled, "insert into items (item_id) values ('x')")
    assert status == 2 and "read-only" in err.lower()
    with Store(filled, read_only=True) as store:
        assert store.count("items") == 0


def test_missing_store_is_one_line(contam, tmp_path):
    status, _, err = contam("sql", "--store", tmp_path / "none.duckdb", "select 1")
    assert status == 2 and "no such store" in err


REFUSED = {
    "copy": "COPY (SELECT * FROM answers) TO '{dir}/out.csv'",
    "export": "EXPORT DATABASE '{dir}/exported'",
    "import": "IMPORT DATABASE '{dir}/exported'",
    "attach": "ATTACH '{dir}/other.duckdb' AS other (READ_WRITE)",
    "install": "INSTALL httpfs",
    "load": "LOAD httpfs",
    "set": "SET enable_external_access = true",
    "pragma": "PRAGMA version",
    "call": "CALL pragma_version()",
    "checkpoint": "CHECKPOINT",
    "insert": "INSERT INTO items (item_id) VALUES ('x')",
    "create": "CREATE TABLE t (a INT)",
    "use": "USE other",
    "two statements": "SELECT 1; SELECT 2",
    "a select then a write": "SELECT 1; COPY items TO '{dir}/out.csv'",
    "explain analyze of a copy": "EXPLAIN ANALYZE COPY items TO '{dir}/out.csv'",
}


@pytest.mark.parametrize("name", REFUSED)
def test_anything_but_one_query_is_refused_in_one_line(contam, filled, tmp_path, name):
    before = sorted(tmp_path.rglob("*"))
    status, out, err = contam("sql", "--store", filled, REFUSED[name].format(dir=tmp_path))
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("contam sql: refused:")
    assert sorted(tmp_path.rglob("*")) == before  # nothing written anywhere


FILE_AND_NETWORK = {
    "read_csv": "SELECT * FROM read_csv('/etc/passwd')",
    "read_text": "SELECT * FROM read_text('/etc/passwd')",
    "read_blob": "SELECT * FROM read_blob('/etc/passwd')",
    "glob": "SELECT * FROM glob('/etc/*')",
    "a path as a table": "SELECT * FROM '/etc/passwd.csv'",
    "a URL": "SELECT * FROM read_parquet('http://127.0.0.1:9/x.parquet')",
}


@pytest.mark.parametrize("name", FILE_AND_NETWORK)
def test_file_and_network_functions_are_switched_off(contam, filled, name):
    status, out, err = contam("sql", "--store", filled, FILE_AND_NETWORK[name])
    assert status == 2 and out == "" and "disabled by configuration" in err


def test_attach_cannot_reach_another_store(contam, filled, tmp_path):
    other = tmp_path / "other.duckdb"
    with Store(other, create=True):
        pass
    status, _, err = contam("sql", "--store", filled, f"ATTACH '{other}' (READ_WRITE)")
    assert status == 2 and "refused: ATTACH" in err
    status, _, err = contam("sql", "--store", filled, f"SELECT * FROM '{other}'")
    assert status == 2 and "disabled by configuration" in err


@pytest.mark.parametrize("query", [
    "WITH a AS (SELECT count(*) AS n FROM answers) SELECT n FROM a", "DESCRIBE answers",
    "SHOW TABLES", "SUMMARIZE answers", "EXPLAIN SELECT * FROM cells", "FROM cells"])
def test_every_read_only_form_runs(contam, filled, query):
    status, out, err = contam("sql", "--store", filled, "--format", "json", query)
    assert status == 0 and json.loads(out), err


def test_table_output_is_text_with_hidden_characters_made_visible(contam, store_path):
    hostile = ["[/INST] done", "[i]x[/i]", "\x1b[31mred", "left\u202eright", "nul\x00here",
               "zero\u200bwidth"]
    with Store(store_path, create=True) as store:
        store.append("answers", [{"item_id": f"i{n}", "model": "[bold]m", "answer": text}
                                 for n, text in enumerate(hostile)])
    status, out, err = contam("sql", "--store", store_path,
                              "select model, answer from latest_answers order by item_id")
    assert status == 0, err
    for shown in ["[/INST] done", "[i]x[/i]", "[bold]m", "\\x1b[31mred", "left\\u202eright",
                  "nul\\x00here", "zero\\u200bwidth"]:
        assert shown in out
    assert not {"\x1b", "\u202e", "\x00", "\u200b"} & set(out)


LONG = "[bold red]markup[/bold red] " * 12 + "END"


def test_piped_table_output_never_cuts_a_value(contam, store_path):
    Store(store_path, create=True).close()
    status, out, err = contam("sql", "--store", store_path,
                              f"SELECT '{LONG}' AS long_value, 42 AS n")
    assert status == 0 and "…" not in out
    assert LONG in out  # whole, on one line, at the table's natural width
    assert max(len(line) for line in out.splitlines()) > 80
    assert err == "1 row\n" and out.endswith("┘\n")  # the footer on its own line


def test_on_a_terminal_long_values_wrap_whole_rather_than_being_cut():
    from contam.harness.jobs.sql import QueryResult

    text = QueryResult(["long_value"], [(LONG,)]).text("table", width=40)
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 40
    inside = "".join(line.strip("│┃ ") for line in text.splitlines()[3:-1])
    assert inside.replace(" ", "") == LONG.replace(" ", "")


def test_the_footer_follows_the_table_on_a_shared_stream(store_path, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    Store(store_path, create=True).close()
    root = Path(__file__).resolve().parents[1]
    shown = subprocess.run([sys.executable, "-m", "contam.harness.cli", "sql", "--store", str(store_path),
                            "SELECT 1 AS one"], cwd=root, capture_output=False, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    lines = shown.stdout.splitlines()
    assert lines[-1] == "1 row" and lines[-2].startswith("└")
