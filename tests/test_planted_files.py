"""Files contam writes beside a store (discovery file, journal, run log) never follow a link or
open a file another user planted there; each is this user's own 0600 file."""

from __future__ import annotations

import os
import stat

import pytest

from contam.harness.errors import UserError
from contam.harness.logs import run_log, run_log_path
from contam.harness.store.discovery import Holder, discovery_path, find_holder, publish
from contam.harness.store.journal import Journal, journal_path
from tests.test_journal import reply

SECRET = b"my own precious file\n"


@pytest.fixture
def victim(tmp_path):
    """A file of the user's own, elsewhere, that a planted link points at."""
    path = tmp_path / "elsewhere" / "thesis.tex"
    path.parent.mkdir()
    path.write_bytes(SECRET)
    return path


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_link_planted_at_the_discovery_files_partial_name_is_not_followed(tmp_path, victim):
    store = tmp_path / "s.duckdb"
    planted = discovery_path(store).with_name(f"s.duckdb.host.{os.getpid()}.partial")
    planted.symlink_to(victim)
    holder = Holder(pid=os.getpid(), command="run", socket=str(tmp_path / "x.sock"))
    path = publish(store, holder)
    assert victim.read_bytes() == SECRET
    assert not path.is_symlink() and mode(path) == 0o600
    assert find_holder(store) == holder


def test_a_link_planted_as_the_discovery_file_is_replaced_not_followed(tmp_path, victim):
    store = tmp_path / "s.duckdb"
    discovery_path(store).symlink_to(victim)
    publish(store, Holder(pid=os.getpid(), command="run", socket=str(tmp_path / "x.sock")))
    assert victim.read_bytes() == SECRET
    assert not discovery_path(store).is_symlink() and mode(discovery_path(store)) == 0o600


def test_the_journal_is_a_new_0600_file(tmp_path):
    journal = Journal(journal_path(tmp_path / "s.duckdb"))
    journal.append(reply(0))
    journal.close(committed=False)
    assert mode(journal.path) == 0o600


def test_a_link_planted_as_the_journal_is_refused_in_one_line(tmp_path, victim):
    path = journal_path(tmp_path / "s.duckdb")
    path.symlink_to(victim)
    with pytest.raises(UserError, match="symbolic link") as refused:
        Journal(path)
    assert str(path) in str(refused.value) and "\n" not in str(refused.value)
    assert victim.read_bytes() == SECRET


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a file another user's")
def test_someone_elses_journal_is_not_appended_to(tmp_path):
    path = journal_path(tmp_path / "s.duckdb")
    path.write_bytes(b"")
    os.chown(path, 65534, 65534)
    with pytest.raises(UserError, match="owned by .*uid 65534"):
        Journal(path)
    assert path.read_bytes() == b""


def test_the_run_log_is_a_0600_file_and_appends_on_resume(tmp_path):
    import logging

    store = tmp_path / "s.duckdb"
    for word in ("first", "second"):
        with run_log(store, "r1") as path:
            logging.getLogger("contam.harness.test").info(word)
    assert mode(path) == 0o600
    text = path.read_text()
    assert "first" in text and "second" in text


def test_a_link_planted_as_the_run_log_is_refused_and_not_followed(tmp_path, victim):
    store = tmp_path / "s.duckdb"
    run_log_path(store, "r1").symlink_to(victim)
    with pytest.raises(UserError, match="symbolic link"):
        with run_log(store, "r1"):
            pass
    assert victim.read_bytes() == SECRET


def test_a_planted_link_beside_a_store_never_reaches_through_contam_run(tmp_path, victim, contam,
                                                                       monkeypatch):
    """End to end: links planted at every name a run writes beside the store (but the journal
    and log, which are refused) leave the linked file as it was."""
    from contam.harness.emulator.server import run_emulator
    from tests.runkit import KEYS, model_entry, write_config

    monkeypatch.setenv("OPENAI_API_KEY", KEYS["OPENAI_API_KEY"])
    store = tmp_path / "s.duckdb"
    for pid in range(os.getpid() - 2, os.getpid() + 3):
        discovery_path(store).with_name(f"s.duckdb.host.{pid}.partial").symlink_to(victim)
    with run_emulator() as emu:
        config = write_config(tmp_path, [model_entry("openai", emu)], items=2)
        status, out, err = contam("run", config, "--store", store, "--no-progress")
    assert status == 0, err
    assert victim.read_bytes() == SECRET
