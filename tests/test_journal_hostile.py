"""A journal beside the store that contam did not write whole: planted by another user, torn,
corrupt, naming unknown tables, or a folder. Replayed only when it is the user's own 0600 file;
bad lines skipped and counted, good ones kept; anything else refused in one line."""

from __future__ import annotations

import os

import orjson
import pytest

from contam.harness.errors import UserError
from contam.harness.store import Store
from contam.harness.store.journal import Journal, journal_path
from tests.test_import import ITEMS, write_csv
from tests.test_journal import answers, reply

FORGED_LABEL = {"labels": [{"item_id": "i9", "model": "m", "run_id": "r1", "label": "correct",
                            "source": "human:adjudicated"}]}


def planted(store_path, *writes: dict, mode: int = 0o600) -> None:
    path = journal_path(store_path)
    path.write_bytes(b"".join(orjson.dumps(write) + b"\n" for write in writes))
    path.chmod(mode)


def write_journal(store_path, lines: list[bytes]) -> None:
    journal = Journal(journal_path(store_path))
    journal.close(committed=False)
    journal_path(store_path).write_bytes(b"\n".join(lines) + b"\n")


# -- item 2: a planted journal ---------------------------------------------------------------------

@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a file another user's")
def test_a_journal_another_user_planted_is_refused_naming_it_and_its_owner(store_path):
    Store(store_path, create=True).close()
    planted(store_path, {**reply(0), **FORGED_LABEL})
    os.chown(journal_path(store_path), 65534, 65534)
    with pytest.raises(UserError) as refused:
        Store(store_path)
    message = str(refused.value)
    assert str(journal_path(store_path)) in message and "uid 65534" in message
    assert "not replayed" in message and "\n" not in message
    assert answers(store_path) == []  # nothing forged reached the store
    assert journal_path(store_path).exists()  # left for the user to look at


def test_a_journal_others_may_write_is_refused_in_one_line(contam, store_path, tmp_path):
    write_csv(tmp_path / "items.csv", ITEMS)
    contam("import", "items", tmp_path / "items.csv", "--store", store_path)
    planted(store_path, {**reply(0), **FORGED_LABEL}, mode=0o666)
    status, out, err = contam("import", "items", tmp_path / "items.csv", "--store", store_path)
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert str(journal_path(store_path)) in err and "mode 666" in err
    with Store(store_path, read_only=True) as store:
        assert store.count("labels") == 0 and store.count("answers") == 0


def test_a_link_planted_as_the_journal_is_not_replayed(store_path, tmp_path):
    Store(store_path, create=True).close()
    elsewhere = tmp_path / "forged.journal"
    elsewhere.write_bytes(orjson.dumps(reply(0)) + b"\n")
    elsewhere.chmod(0o600)
    journal_path(store_path).symlink_to(elsewhere)
    with pytest.raises(UserError, match="symbolic link"):
        Store(store_path)
    assert answers(store_path) == []


def test_the_users_own_0600_journal_is_still_replayed(store_path):
    Store(store_path, create=True).close()
    planted(store_path, reply(0))
    with Store(store_path) as store:
        assert store.replayed == 1


# -- item 10: corrupt lines ------------------------------------------------------------------------

def test_corrupt_lines_are_skipped_good_ones_kept_and_the_count_said(store_path, capsys):
    Store(store_path, create=True).close()
    write_journal(store_path, [
        orjson.dumps(reply(0)),
        b'{"attempts": [{"run_id": "r1", "item_id": "i7"',  # torn
        b"\x00\xff",
        b"[1,2,3]",
        b'"str"',
        b'{"attempts": "not a list"}',
        b'{"attempts": [1, 2]}',
        orjson.dumps(reply(1)),
    ])
    with Store(store_path) as store:
        assert store.replayed == 2 and store.journal_skipped == 6
    err = capsys.readouterr().err
    assert f"{journal_path(store_path)}: skipped 6 journal lines" in err
    assert "recovered 2 replies" in err and len(err.strip().splitlines()) == 1
    assert [row[0] for row in answers(store_path)] == ["i0", "i1"]
    assert not journal_path(store_path).exists()


def test_a_line_whose_values_the_store_refuses_costs_only_itself(store_path, capsys):
    Store(store_path, create=True).close()
    bad = reply(5)
    bad["answers"][0]["created_at"] = "not a time"
    write_journal(store_path, [orjson.dumps(reply(0)), orjson.dumps(bad), orjson.dumps(reply(1))])
    with Store(store_path) as store:
        assert store.replayed == 2 and store.journal_skipped == 1
    assert "1 with values the store refused" in capsys.readouterr().err
    assert [row[0] for row in answers(store_path)] == ["i0", "i1"]


def test_a_line_with_a_mistyped_key_is_skipped(store_path):
    Store(store_path, create=True).close()
    bad = reply(5)
    bad["attempts"][0]["attempt"] = "first"
    write_journal(store_path, [orjson.dumps(bad), orjson.dumps(reply(0))])
    with Store(store_path) as store:
        assert store.replayed == 1 and store.journal_skipped == 1


def test_contam_import_after_a_corrupt_journal_succeeds_and_says_so(contam, store_path, tmp_path):
    write_csv(tmp_path / "items.csv", ITEMS)
    contam("import", "items", tmp_path / "items.csv", "--store", store_path)
    write_journal(store_path, [b'{"attempts": [', b"\x00\xff", b"[1,2,3]", b'"str"'])
    status, out, err = contam("import", "items", tmp_path / "items.csv", "--store", store_path)
    assert status == 0, err
    assert "skipped 4 journal lines" in err and "Traceback" not in err


# -- item 11: a folder, an unknown table -----------------------------------------------------------

def test_a_journal_path_that_is_a_folder_is_refused_in_one_line(contam, store_path, tmp_path):
    write_csv(tmp_path / "items.csv", ITEMS)
    contam("import", "items", tmp_path / "items.csv", "--store", store_path)
    journal_path(store_path).mkdir()
    status, out, err = contam("import", "items", tmp_path / "items.csv", "--store", store_path)
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert str(journal_path(store_path)) in err and "folder" in err


def test_a_line_naming_an_unknown_table_is_skipped_with_a_count_every_time(store_path, capsys):
    Store(store_path, create=True).close()
    unknown = {**reply(3), "secrets": [{"x": 1}]}
    odd_column = reply(4)
    odd_column["answers"][0]["shoe_size"] = 44
    write_journal(store_path, [orjson.dumps(unknown), orjson.dumps(odd_column),
                               orjson.dumps(reply(0))])
    with Store(store_path) as store:
        assert store.replayed == 1 and store.journal_skipped == 2
    assert "2 naming an unknown table or column" in capsys.readouterr().err
    with Store(store_path) as store:  # the resume after: nothing left to trip on
        assert store.replayed == 0 and store.journal_skipped == 0
