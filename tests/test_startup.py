"""`contam --version` and a simple `contam sql` import only what they use: no pandas, numpy or
torch (seconds of start-up). What a whole `contam` process has imported when it exits is read in a
subprocess; the times themselves are scripts/bench_startup.py's to measure, not a test's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Runs `python -m contam.harness.cli ARGS` as the console script would, and at exit writes the
# third-party packages the process imported (top-level names, the standard library left out).
_PROBE = """
import atexit, runpy, sys
PROJECT = {"contam", "tests", "scripts"}
def imported():
    names = {m.split(".")[0] for m in sys.modules if not m.startswith("_")}
    return sorted(names - set(sys.stdlib_module_names) - PROJECT)
atexit.register(lambda: print("IMPORTED", *imported(), file=sys.stderr))
sys.argv = ["contam", *sys.argv[1:]]
runpy.run_module("contam.harness.cli", run_name="__main__", alter_sys=True)
"""


def imported_by(*args: str) -> set[str]:
    result = subprocess.run([sys.executable, "-c", _PROBE, *map(str, args)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stderr.splitlines() if line.startswith("IMPORTED"))
    return set(line.split()[1:])


def test_contam_version_imports_no_third_party_package():
    assert imported_by("--version") == set()


@pytest.fixture
def filled_store(tmp_path, contam):
    items = tmp_path / "items.csv"
    items.write_text("item_id,title,subset,question,reference\ni1,Pokémon Red,official,Q?,R\n",
                     encoding="utf-8")
    store = tmp_path / "s.duckdb"
    assert contam("import", "items", items, "--store", store)[0] == 0
    return store


def test_a_simple_contam_sql_imports_duckdb_and_the_table_printer_only(filled_store):
    imported = imported_by("sql", "--store", filled_store, "select count(*) from cells")
    # pandas, numpy, torch, scipy, stamina, httpx, anyio ... would each add start-up time
    assert imported <= {"duckdb", "orjson", "rich"}, imported - {"duckdb", "orjson", "rich"}
    assert "duckdb" in imported  # the probe sees what the command imported
