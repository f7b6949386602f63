"""Odd stores and odd requests, each answered in one line: a store that is a FIFO or a folder,
Ctrl-C on a long `contam sql`, and `contam probe cdd --samples` above its stated maximum."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.store import Store
from tests.test_import import ITEMS, write_csv

ROOT = Path(__file__).resolve().parents[1]


def contam_process(*args: object, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness.cli", *map(str, args)], cwd=ROOT,
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


def test_ctrl_c_on_a_long_sql_is_one_line(tmp_path):
    store = tmp_path / "s.duckdb"
    Store(store, create=True).close()
    child = contam_process("sql", "--store", store, "SELECT count(*) FROM range(1000000000000) a",
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while len(os.listdir(f"/proc/{child.pid}/task")) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)  # DuckDB's worker threads: the store is open, the query under way
    time.sleep(1)
    for _ in range(6):  # a signal that lands just before DuckDB starts listening waits: again
        child.send_signal(signal.SIGINT)
        try:
            out, err = child.communicate(timeout=10)
            break
        except subprocess.TimeoutExpired:
            continue
    else:
        child.kill()
        pytest.fail("contam sql went on after six Ctrl-C")
    assert child.returncode == 130, err
    assert err.strip() == "contam sql: interrupted"


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
    from harness.cli import main

    with pytest.raises(SystemExit):
        main(["probe", "cdd", "--help"])
    assert "at most 1,000" in " ".join(capsys.readouterr().out.split())
