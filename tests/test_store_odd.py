"""Odd stores and odd requests, each answered in one line: a store that is a FIFO or a folder,
Ctrl-C on a long `contam sql`, and `contam probe cdd --samples` above its stated maximum."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from contam.harness.store import Store
from tests.test_import import ITEMS, write_csv

ROOT = Path(__file__).resolve().parents[1]


def contam_process(*args: object, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "contam.harness.cli", *map(str, args)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, **kwargs)


def finished(*args: object) -> tuple[int, str, str]:
    """`contam ARGS` in a process of its own, killed after 60 s: a hang fails, not blocks."""
    child = contam_process(*args)
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        pytest.fail(f"contam {args[0]} hung")
    return child.returncode, out, err


def commands(store: Path, tmp_path: Path) -> dict[str, list[object]]:
    return {"sql": ["sql", "--store", store, "SELECT 1"],
            "report": ["report", "--store", store, "--format", "json", "--out", tmp_path / "r"],
            "import": ["import", "items", write_csv(tmp_path / "i.csv", ITEMS), "--store", store],
            "batches": ["batches", "--store", store],
            "cost": ["cost", "--store", store]}


@pytest.mark.parametrize("command", ["sql", "report", "import"])
def test_a_store_that_is_a_fifo_is_refused_in_one_line_not_waited_on(tmp_path, command):
    store = tmp_path / "s.duckdb"
    os.mkfifo(store)
    status, out, err = finished(*commands(store, tmp_path)[command])
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{store}: not a store (it is a FIFO)" in err


@pytest.mark.parametrize("command", ["sql", "report", "import", "batches", "cost"])
def test_a_store_that_is_a_folder_is_refused_in_one_line(contam, tmp_path, command):
    store = tmp_path / "s.duckdb"
    store.mkdir()
    status, out, err = contam(*commands(store, tmp_path)[command])
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{store}: not a store (it is a folder)" in err


def test_ctrl_c_on_a_long_sql_is_one_line(contam, tmp_path, monkeypatch):
    """DuckDB answers Ctrl-C in a query with ``RuntimeError: Query interrupted`` (seen from a
    real SIGINT to `contam sql`); the command makes it its one "interrupted" line. Raised here
    where DuckDB raises it: a real signal's timing on a loaded machine made the test flaky."""
    store = tmp_path / "s.duckdb"
    Store(store, create=True).close()

    def interrupted(self, query):
        raise RuntimeError("Query interrupted")

    monkeypatch.setattr(Store, "checked_chunks", interrupted)
    status, out, err = contam("sql", "--store", store, "SELECT count(*) FROM range(10) a")
    assert status == 130 and err.strip() == "contam sql: interrupted" and out == ""


def test_cdd_samples_above_the_stated_maximum_are_refused_in_one_line(contam, tmp_path):
    from tests.runkit import write_config

    model = {"name": "m", "provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
    config = write_config(tmp_path, [model], items=3)
    status, out, err = contam("probe", "cdd", config, "--store", tmp_path / "s.duckdb",
                              "--samples", "1000000")
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert "--samples must be from 1 to 1,000, not 1,000,000" in err
    assert not (tmp_path / "s.duckdb").exists()  # refused before anything was made


def test_cdd_help_text_names_the_maximum(capsys):
    from contam.harness.cli import main

    with pytest.raises(SystemExit):
        main(["probe", "cdd", "--help"])
    assert "at most 1,000" in " ".join(capsys.readouterr().out.split())
