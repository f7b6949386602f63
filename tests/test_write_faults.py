"""Writing fails during a run (a full disk, the store's folder removed): the run stops sending,
keeps what was received where it can (the reply journal), says so in one line with how many
received answers were not kept, and exits non-zero. Faults injected at the writer, and a real
full file system (a small tmpfs) where this process may mount one."""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import duckdb
import pytest

from contam.harness.emulator.server import run_emulator
from contam.harness.emulator.settings import EmulatorSettings
from contam.harness.engine import writer as writer_module
from contam.harness.engine.writer import BatchWriter
from contam.harness.store import Store
from contam.harness.store.journal import Journal, journal_path
from tests.runkit import KEYS, model_entry, write_config
from tests.test_journal import reply

NOT_KEPT = re.compile(r"(\d+) received answers? could not be kept")


def chat_requests(emu) -> int:
    return sum(request.path == "/v1/chat/completions" for request in emu.requests)


def answers(store) -> int:
    with Store(store, read_only=True) as opened:
        return opened.count("answers")


class _Disk:
    """A disk that is full until ``free()``: every commit meanwhile fails as DuckDB's does."""

    def __init__(self, monkeypatch) -> None:
        self.full, self.tries = True, 0
        real = BatchWriter._commit

        def commit(writer, statements):
            self.tries += 1
            if self.full:
                raise duckdb.TransactionException("TransactionContext Error: Failed to commit: "
                                                  'Could not write file "s.duckdb.wal": No space '
                                                  "left on device")
            real(writer, statements)

        monkeypatch.setattr(BatchWriter, "_commit", commit)
        monkeypatch.setattr(writer_module, "SPACE_RETRY_S", 0.01)


async def _until(condition) -> None:
    with anyio.fail_after(10):
        while not condition():
            await anyio.sleep(0.01)


async def _held(writer: BatchWriter, said: list, replies: int) -> None:
    """Write ``replies`` replies on a full disk, until the writer says it holds them."""
    writer.on_waiting = said.append
    for n in range(replies):
        await writer.write(reply(n))
    await _until(lambda: said)


def test_a_full_disk_holds_the_answers_and_commits_them_once_there_is_space(store_path,
                                                                           monkeypatch):
    disk, said = _Disk(monkeypatch), []

    async def main() -> BatchWriter:
        with Store(store_path, create=True) as store:
            async with BatchWriter(store, min_age_s=0, max_delay_s=0.05) as writer:
                await _held(writer, said, 8)
                tries = disk.tries
                await _until(lambda: disk.tries > tries + 2)  # tried again, and again
                disk.full = False
                await _until(lambda: writer.rows_committed)
            return writer

    writer = anyio.run(main)
    assert said == ["disk full: waiting for space (8 answers held)"]
    assert writer.failure is None and writer.failure_line() is None and writer.unkept == 0
    assert answers(store_path) == 8


def test_ctrl_c_while_the_writer_waits_for_space_without_a_journal_waits_on_until_pressed_again(
        store_path, monkeypatch):
    _Disk(monkeypatch)
    stopped, said = [], []

    async def main() -> BatchWriter:
        with Store(store_path, create=True) as store:
            async with BatchWriter(store, journal=False, min_age_s=0, max_writes=1) as writer:
                writer.on_failure, writer.on_waiting = lambda: stopped.append(True), said.append
                await writer.write(reply(0))
                await _until(lambda: said)
                await writer.write(reply(1))  # a reply in flight
                writer.stop_waiting()  # what the engine's signal watcher does on Ctrl-C
                await _until(lambda: len(said) == 2)
                assert stopped == []  # the answers are still held
                writer.stop_waiting()  # Ctrl-C again
            return writer

    writer = anyio.run(main)
    assert stopped == [True] and said == [
        "disk full: waiting for space (1 answer held)",
        "disk full: the journal has no room for the 2 answers held either: still waiting for "
        "space (Ctrl-C again gives them up)"]
    assert writer.unkept == 2
    line = writer.failure_line()
    assert "the disk is full" in line and "2 received answers could not be kept" in line
    assert "free some space" in line and "\n" not in line


def test_ctrl_c_while_the_writer_waits_for_space_puts_the_held_answers_in_the_journal(
        store_path, monkeypatch):
    """The journal refused them while the disk was full; at Ctrl-C it has room again (a reply
    line is far smaller than a commit): they go there, the writer stops, nothing is lost."""
    _Disk(monkeypatch)
    journal_full, said = [True], []
    real_append = Journal.append

    def append(journal, rows):
        if journal_full[0]:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_append(journal, rows)

    monkeypatch.setattr(Journal, "append", append)

    async def main() -> BatchWriter:
        with Store(store_path, create=True) as store:
            async with BatchWriter(store, min_age_s=0, max_writes=1) as writer:
                await _held(writer, said, 3)
                journal_full[0] = False
                writer.stop_waiting()
            return writer

    writer = anyio.run(main)
    assert said == ["disk full: waiting for space (3 answers held)"]
    assert writer.unkept == 0
    assert "every received answer was kept; the journal beside the store holds 3 more" in \
        writer.failure_line()
    assert len(journal_path(store_path).read_bytes().splitlines()) == 3


# Run as a child: three replies held on a full disk (no journal) when the writer closes, as at a
# run's end; Ctrl-C arrives while it waits (sent at its first failed commit after closing, by then
# the writer listens); the disk gets room once the writer has said that it waits on.
CTRL_C_AT_THE_END = """
import os, signal, sys
import anyio, duckdb
from contam.harness.engine import writer as writer_module
from contam.harness.engine.writer import BatchWriter
from contam.harness.store import Store
from tests.test_journal import reply

said, sent = [], []
real = BatchWriter._commit


def commit(writer, statements):
    if writer._closed and not sent:
        sent.append(True)
        os.kill(os.getpid(), signal.SIGINT)
    if len(said) < 2:
        raise duckdb.TransactionException("Failed to commit: No space left on device")
    real(writer, statements)


BatchWriter._commit = commit
writer_module.SPACE_RETRY_S = 0.01


async def main():
    with Store(sys.argv[1], create=True) as store:
        async with BatchWriter(store, journal=False, ctrl_c=True, max_delay_s=60) as writer:
            writer.on_waiting = said.append
            for n in range(3):
                await writer.write(reply(n))
    print(writer.failure_line())
    print(*said, sep="\\n")


anyio.run(main)
"""


def test_ctrl_c_after_the_run_while_the_writer_waits_for_space_keeps_the_held_answers(store_path):
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", CTRL_C_AT_THE_END, str(store_path)], cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.splitlines() == [
        "None", "disk full: waiting for space (3 answers held)",
        "disk full: the journal has no room for the 3 answers held either: still waiting for "
        "space (Ctrl-C again gives them up)"]
    assert answers(store_path) == 3


def test_a_journal_write_that_fails_cuts_off_its_torn_line(tmp_path, monkeypatch):
    journal = Journal(journal_path(tmp_path / "s.duckdb"))
    journal.append(reply(0))
    real_write = os.write

    def half_then_full(fd, data):
        if len(data) > 20:
            return real_write(fd, bytes(data[:20]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError):
        journal.append(reply(1))
    monkeypatch.undo()
    journal.close(committed=False)
    assert len(journal.path.read_bytes().splitlines()) == 1  # only the whole line stays


def test_a_journal_the_full_disk_refuses_does_not_stop_the_run(tmp_path, contam, monkeypatch):
    """The answers wait in memory for their commit instead (and commit while there is room)."""
    monkeypatch.setenv("OPENAI_API_KEY", KEYS["OPENAI_API_KEY"])
    real_append = Journal.append
    appended = []

    def fills_up(self, rows):
        if len(appended) >= 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_append(self, rows)
        appended.append(rows)

    monkeypatch.setattr(Journal, "append", fills_up)
    store = tmp_path / "s.duckdb"
    with run_emulator(EmulatorSettings(latency_ms=50)) as emu:
        config = write_config(tmp_path, [model_entry("openai", emu, concurrency=2)], items=20)
        status, out, err = contam("run", config, "--store", store, "--no-progress")
        assert status == 0 and "Traceback" not in err, err
        assert chat_requests(emu) == 20  # each asked once
    assert answers(store) == 20


def test_the_store_folder_removed_mid_run_stops_it_and_says_so(tmp_path, contam, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEYS["OPENAI_API_KEY"])
    folder = tmp_path / "runs"
    store = folder / "s.duckdb"
    with run_emulator(EmulatorSettings(latency_ms=100)) as emu:
        config = write_config(tmp_path, [model_entry("openai", emu, concurrency=2)], items=60)
        contam("import", "items", tmp_path / "items.csv", "--store", store)
        remover = threading.Timer(1.0, shutil.rmtree, [folder])
        remover.start()
        status, out, err = contam("run", config, "--store", store, "--no-progress")
        remover.join()
        sent = chat_requests(emu)
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{store}: the store (or its folder) was removed" in err and "restore it" in err
    assert "Traceback" not in err and sent < 60


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 24 MiB tmpfs of its own (root only), unmounted after."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)],
                          capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({made.stderr.decode().strip()})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(folder, leave: int) -> None:
    """Fill the file system of ``folder`` but ``leave`` bytes."""
    free = os.statvfs(folder).f_bavail * os.statvfs(folder).f_frsize
    with open(folder / "filler", "wb") as out:
        out.write(b"\0" * max(free - leave, 0))


def test_a_real_full_disk_mid_run_waits_for_space_and_then_goes_on(tmp_path, small_tmpfs):
    store = small_tmpfs / "s.duckdb"
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), **KEYS}
    with run_emulator(EmulatorSettings(latency_ms=20)) as emu:
        config = write_config(tmp_path, [model_entry("openai", emu, concurrency=2)], items=40)
        subprocess.run([sys.executable, "-m", "contam.harness.cli", "import", "items",
                        str(tmp_path / "items.csv"), "--store", str(store)], env=env, check=True,
                       capture_output=True)
        fill(small_tmpfs, leave=8 * 1024)
        run = subprocess.Popen([sys.executable, "-m", "contam.harness.cli", "run", str(config), "--store",
                                str(store), "--no-progress"], env=env, cwd=root, text=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            waiting = run.stderr.readline()  # the first thing it says: it waits, holding answers
            assert re.fullmatch(r"disk full: waiting for space \(\d+ answers? held\)\n", waiting)
            (small_tmpfs / "filler").unlink()  # space again
            rest = run.communicate(timeout=120)[1]
        finally:
            if run.poll() is None:
                run.kill()
        assert run.returncode == 0 and "Traceback" not in rest, rest
    assert answers(store) == 40
