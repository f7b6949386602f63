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
import threading

import anyio
import duckdb
import pytest

from harness.emulator.server import run_emulator
from harness.emulator.settings import EmulatorSettings
from harness.engine.writer import BatchWriter
from harness.store import Store
from harness.store.journal import Journal, journal_path
from tests.runkit import KEYS, model_entry, write_config
from tests.test_journal import reply

NOT_KEPT = re.compile(r"(\d+) received answers? could not be kept")


def chat_requests(emu) -> int:
    return sum(request.path == "/v1/chat/completions" for request in emu.requests)


def answers(store) -> int:
    with Store(store, read_only=True) as opened:
        return opened.count("answers")


def test_a_failed_commit_stops_the_writer_and_counts_what_was_not_kept(store_path, monkeypatch):
    def full(self, statements):
        raise duckdb.IOException("IO Error: Could not write file: No space left on device")

    monkeypatch.setattr(BatchWriter, "_commit", full)
    stopped = []

    async def main() -> BatchWriter:
        with Store(store_path, create=True) as store:
            async with BatchWriter(store, journal=False, min_age_s=0, max_writes=1) as writer:
                writer.on_failure = lambda: stopped.append(True)
                await writer.write(reply(0))
                with anyio.fail_after(5):
                    while writer.failure is None:
                        await anyio.sleep(0.01)
                await writer.write(reply(1))  # a reply in flight when it failed
            return writer

    writer = anyio.run(main)
    assert stopped == [True]
    assert writer.unkept == 2
    line = writer.failure_line()
    assert "the disk is full" in line and "2 received answers could not be kept" in line
    assert "free some space" in line and "\n" not in line


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


def test_a_full_disk_mid_run_stops_sending_keeps_the_journal_and_says_so(tmp_path, contam,
                                                                        monkeypatch):
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
    settings = EmulatorSettings(latency_ms=50)
    with run_emulator(settings) as emu:
        config = write_config(tmp_path, [model_entry("openai", emu, concurrency=2)], items=20)
        status, out, err = contam("run", config, "--store", store, "--no-progress")
        first = chat_requests(emu)
        monkeypatch.setattr(Journal, "append", real_append)  # space again
        assert status == 2 and len(err.strip().splitlines()) == 1, err
        assert "the disk is full" in err and "stopped sending" in err and "Traceback" not in err
        assert first < 20  # stopped sending
        not_kept = int(NOT_KEPT.search(err)[1])
        assert "the journal beside the store holds 3 more" in err
        status, out, err = contam("run", config, "--store", store, "--no-progress")
        assert status == 0, out + err
        assert "3 replies a killed run had received, recovered from its journal" in out
        # the three journaled replies are not paid for twice; only the lost ones are
        assert chat_requests(emu) - first == 20 - first + not_kept
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


def test_a_real_full_disk_mid_run_is_one_line_and_non_zero(tmp_path, small_tmpfs, contam,
                                                           monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEYS["OPENAI_API_KEY"])
    store = small_tmpfs / "s.duckdb"
    with run_emulator(EmulatorSettings(latency_ms=20)) as emu:
        config = write_config(tmp_path, [model_entry("openai", emu, concurrency=2)], items=40)
        contam("import", "items", tmp_path / "items.csv", "--store", store)
        fill(small_tmpfs, leave=8 * 1024)
        status, out, err = contam("run", config, "--store", store, "--no-progress")
        sent = chat_requests(emu)
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert "disk is full" in err and "Traceback" not in err and sent < 40
    (small_tmpfs / "filler").unlink()
    assert answers(store) >= 0  # the store still opens once there is room
