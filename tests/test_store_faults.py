"""A store or an output folder that cannot be used: one line naming the path, a non-zero exit,
nothing half-written, never a traceback."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contam.harness.store import Store
from tests.test_analysis import small_store
from tests.test_import import ITEMS, write_csv

CONTRAST = ("--contrast", "canon,hack")


@contextlib.contextmanager
def read_only_folder(folder: Path):
    """A folder nobody may write into: immutable for root (who ignores modes), mode 555 otherwise."""
    folder.mkdir(exist_ok=True)
    if os.geteuid() == 0:
        made = subprocess.run(["chattr", "+i", str(folder)], capture_output=True)
        if made.returncode != 0:
            pytest.skip("running as root on a file system without chattr +i")
        undo = ["chattr", "-i", str(folder)]
    else:
        folder.chmod(0o555)
        undo = ["chmod", "755", str(folder)]
    try:
        yield folder
    finally:
        subprocess.run(undo, check=True)


def assert_one_line(status: int, err: str, path: Path | str, *words: str) -> None:
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert str(path) in err and "Traceback" not in err
    for word in words:
        assert word in err, err


def filled(path: Path) -> Path:
    small_store(path).close()
    return path


@pytest.mark.parametrize("damage", ["garbage", "truncated to half", "truncated to the header"])
@pytest.mark.parametrize("command", ["sql", "report", "import"])
def test_a_damaged_store_is_one_line(contam, tmp_path, damage, command):
    path = filled(tmp_path / "s.duckdb")
    data = path.read_bytes()
    path.write_bytes({"garbage": os.urandom(len(data)), "truncated to half": data[:len(data) // 2],
                      "truncated to the header": data[:5000]}[damage])
    args = {"sql": ["sql", "--store", path, "select * from cells"],
            "report": ["report", "--store", path, "--format", "json", *CONTRAST],
            "import": ["import", "items", write_csv(tmp_path / "i.csv", ITEMS), "--store", path]}
    status, out, err = contam(*args[command])
    assert_one_line(status, err, path, "store")
    assert out == ""


def test_a_locked_store_is_one_line(contam, tmp_path, monkeypatch):
    monkeypatch.setattr("contam.harness.store.store.LOCK_WAIT_S", 0.2)  # how long opens wait for it
    path = filled(tmp_path / "s.duckdb")
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; "
                               f"con = duckdb.connect({str(path)!r}); print('held', flush=True); "
                               "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        status, _, err = contam("import", "items", write_csv(tmp_path / "i.csv", ITEMS), "--store", path)
        assert_one_line(status, err, path, "lock")
        status, _, err = contam("sql", "--store", path, "select 1")
        assert_one_line(status, err, path, "lock")
    finally:
        holder.kill()
        holder.wait()


def test_a_store_in_a_read_only_folder_is_one_line_and_unchanged(contam, tmp_path):
    folder = tmp_path / "locked"
    path = filled(folder.mkdir() or folder / "s.duckdb")
    before = path.read_bytes()
    with read_only_folder(folder):
        status, _, err = contam("import", "items", write_csv(tmp_path / "i.csv", ITEMS), "--store", path)
        assert_one_line(status, err, path, "cannot write the store there")
        status, out, _ = contam("sql", "--store", path, "select count(*) from items")
        assert status == 0  # reading is still fine
    assert path.read_bytes() == before


def test_a_store_under_a_file_is_one_line(contam, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    path = blocker / "s.duckdb"
    status, _, err = contam("import", "items", write_csv(tmp_path / "i.csv", ITEMS), "--store", path)
    assert_one_line(status, err, path, f"cannot write the store there ({blocker} is a file")
    assert blocker.read_text() == "not a folder"
    status, _, err = contam("import", "items", write_csv(tmp_path / "i.csv", ITEMS), "--store",
                            blocker / "deeper" / "s.duckdb")
    assert_one_line(status, err, blocker / "deeper", f"({blocker} is a file, not a folder)")


def test_report_out_onto_a_file_is_one_line(contam, tmp_path):
    path = filled(tmp_path / "s.duckdb")
    target = tmp_path / "report.txt"
    target.write_text("keep me")
    status, _, err = contam("report", "--store", path, "--out", target, *CONTRAST)
    assert_one_line(status, err, target, "is a file")
    assert target.read_text() == "keep me"
    status, _, err = contam("report", "--store", path, "--out", target / "sub", *CONTRAST)
    assert_one_line(status, err, target / "sub", "cannot create the report folder")


def test_report_out_into_a_read_only_folder_writes_nothing(contam, tmp_path):
    path = filled(tmp_path / "s.duckdb")
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").write_text("the old report")
    with read_only_folder(out):
        status, _, err = contam("report", "--store", path, "--out", out, *CONTRAST)
        assert_one_line(status, err, out, "cannot write the report there")
        status, _, err = contam("report", "--store", path, "--out", out / "new", *CONTRAST)
        assert_one_line(status, err, out / "new", "cannot create the report folder")
    assert sorted(p.name for p in out.iterdir()) == ["report.md"]
    assert (out / "report.md").read_text() == "the old report"


def test_a_report_write_that_fails_half_way_leaves_the_folder_as_it_was(contam, tmp_path, monkeypatch):
    from contam.harness.report.plots import paper as figures

    path = filled(tmp_path / "s.duckdb")
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").write_text("the old report")

    def disk_full(fig, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(figures, "save_pdf", disk_full)
    status, _, err = contam("report", "--store", path, "--out", out, *CONTRAST)
    assert_one_line(status, err, out, "No space left on device")
    assert sorted(p.name for p in out.iterdir()) == ["report.md"]
    assert (out / "report.md").read_text() == "the old report"
