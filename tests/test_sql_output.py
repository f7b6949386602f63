"""`contam sql` on large results and at awkward moments: the table capped with a footer that says
so, CSV and JSON streamed in flat memory, DuckDB's error lines kept, and Ctrl-C obeyed whenever it
arrives (a real SIGINT to a real process)."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import orjson
import pytest

from contam.harness.jobs.sql import print_sql
from contam.harness.store import Store

ROOT = Path(__file__).resolve().parents[1]
RANGE = "select range as n, 'row ' || range as label from range({rows})"


@pytest.fixture
def empty(store_path):
    Store(store_path, create=True).close()
    return store_path


def test_a_large_table_shows_its_first_rows_and_says_how_to_get_all(contam, empty):
    status, out, err = contam("sql", "--store", empty, RANGE.format(rows=200_000))
    assert status == 0 and err == "200,000 rows, 40 shown: --format csv for all\n"
    shown = [line for line in out.splitlines() if "row " in line]
    assert len(shown) == 40 and "row 39 " in shown[-1]


def test_max_rows_sets_how_many_the_table_shows(contam, empty):
    status, out, err = contam("sql", "--store", empty, "--max-rows", "5", RANGE.format(rows=9))
    assert status == 0 and err == "9 rows, 5 shown: --format csv for all\n"
    assert sum("row " in line for line in out.splitlines()) == 5
    status, out, err = contam("sql", "--store", empty, "--max-rows", "0", RANGE.format(rows=90))
    assert err == "90 rows\n" and sum("row " in line for line in out.splitlines()) == 90


def test_a_negative_max_rows_is_refused_in_one_line(contam, empty, capsys):
    with pytest.raises(SystemExit) as exited:
        contam("sql", "--store", empty, "--max-rows", "-1", "select 1")
    err = capsys.readouterr().err
    assert exited.value.code == 2 and len(err.splitlines()) == 1
    assert "--max-rows: a whole number of rows, 0 or more (0: all), not '-1'" in err


class _Counted(io.TextIOBase):
    """Stdout that keeps only a count and the last line, so memory measures the writer alone."""

    def __init__(self) -> None:
        self.chars, self.tail = 0, ""

    def write(self, text: str) -> int:
        self.chars += len(text)
        self.tail = (self.tail + text)[-200:]
        return len(text)


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_csv_and_json_write_every_row_in_flat_memory(empty, fmt):
    peaks = {}
    for rows in (20_000, 400_000):
        out = _Counted()
        tracemalloc.start()
        printed = print_sql(RANGE.format(rows=rows), out, store=empty, format=fmt)
        peaks[rows] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert printed.rows == rows and f"row {rows - 1}" in out.tail
    # held whole, 400,000 rows would be tens of MB of Python objects; streamed, no more than
    # a chunk's worth, whatever the count
    assert peaks[400_000] < 2 * peaks[20_000] + (4 << 20), peaks


def test_streamed_json_is_the_same_text_as_one_list(empty):
    query = ("select 1 as n, 'a\"\\n' as s, null as z, 2.5::decimal(4,2) as d, "
             "timestamp '2024-01-02 03:04:05' as t union all "
             "select 2, 'é', 3, 1.25, timestamp '2025-01-01'")
    out = io.StringIO()
    print_sql(query, out, store=empty, format="json")
    with Store(empty, read_only=True) as store:
        records = store.query_dicts(query)
    assert out.getvalue() == orjson.dumps(records, default=str,
                                          option=orjson.OPT_INDENT_2).decode() + "\n"
    assert json.loads(out.getvalue())[1]["s"] == "é"


def test_a_failed_query_keeps_duckdbs_lines(contam, empty):
    Path(empty).unlink()
    with Store(empty, create=True):
        pass
    status, _, err = contam("sql", "--store", empty, "select item_idd from items")
    lines = err.splitlines()
    assert status == 2 and lines[0].startswith("contam sql: query failed: Binder Error")
    assert "\\n" not in err and any(line.startswith("Candidate bindings") for line in lines)
    assert "LINE 1: select item_idd from items" in lines
    assert lines[-1].strip().startswith("^")


RUNAWAY = "select sum(hash(range)) from range(100000000000)"


def _contam_sql(store: Path, query: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "contam.harness.cli", "sql", "--store", str(store),
                             query], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                            start_new_session=True)


def _interrupted_within(process: subprocess.Popen, seconds: float) -> tuple[int, str]:
    process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"still running {seconds} s after Ctrl-C")
    return process.returncode, err


@pytest.mark.parametrize("after_s", [1.0, 2.0, 3.5])
def test_ctrl_c_stops_a_runaway_query_whenever_it_comes(empty, after_s):
    process = _contam_sql(empty, RUNAWAY)
    time.sleep(after_s)
    status, err = _interrupted_within(process, 10)
    assert status == 130 and err == "contam sql: interrupted\n"


def test_ctrl_c_while_waiting_for_a_held_store(empty):
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; "
                               f"con = duckdb.connect({str(empty)!r}); print('held', flush=True); "
                               "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        process = _contam_sql(empty, "select 1")
        time.sleep(2.0)  # past its imports: in the store's open, retrying the lock
        assert process.poll() is None
        status, err = _interrupted_within(process, 10)
        assert status == 130 and err == "contam sql: interrupted\n"
    finally:
        holder.kill()
        holder.wait()


def test_a_reader_that_stops_reading_ends_it_quietly(empty):
    """`contam sql --format csv ... | head -2`: no traceback once head has what it wanted."""
    process = subprocess.Popen([sys.executable, "-m", "contam.harness.cli", "sql", "--store", str(empty),
                                "--format", "csv", RANGE.format(rows=2_000_000)], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert process.stdout.readline() == b"n,label\n"
    process.stdout.close()  # what head does once it has its lines
    err = process.stderr.read()
    assert process.wait(timeout=60) == 128 + signal.SIGPIPE and err == b""
