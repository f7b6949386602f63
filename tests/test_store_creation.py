"""Only the commands that start a study create a store (import items, run, demo, probe, bench);
every other command given a path that is not a store says so in one line and leaves nothing
behind, so a mistyped --store never becomes a new, empty store. (`import answers` does not create
one either: its answers name items, which a new store cannot hold, so it could only leave an empty
store behind.)"""

from __future__ import annotations

import pytest

from contam.harness.errors import UserError
from contam.harness.store import Store

JUDGE_CONFIG = """
[[models]]
name = "m"
provider = "ollama"
model = "m"
base_url = "http://127.0.0.1:9"

[judge]
provider = "ollama"
model = "j"
base_url = "http://127.0.0.1:9"
"""

READING_COMMANDS = [
    ["score", "--metric", "bleu2"],
    ["judge", "{config}"],
    ["import", "labels", "{labels}"],
    ["import", "answers", "{answers}"],
    ["report"],
    ["sql", "select 1"],
    ["batches"],
    ["cost", "--price", "*=1,1"],
]


@pytest.fixture
def inputs(tmp_path):
    config = tmp_path / "study.toml"
    config.write_text(JUDGE_CONFIG, encoding="utf-8")
    labels = tmp_path / "labels.csv"
    labels.write_text("item_id,model,rater,label\ni1,m,human,Right\n", encoding="utf-8")
    answers = tmp_path / "answers.csv"
    answers.write_text("item_id,model,answer\ni1,m,A\n", encoding="utf-8")
    return {"config": config, "labels": labels, "answers": answers}


@pytest.mark.parametrize("command", READING_COMMANDS, ids=" ".join)
def test_a_mistyped_store_is_no_such_store_and_nothing_is_created(command, inputs, tmp_path,
                                                                  contam):
    missing = tmp_path / "typo" / "nosuch.duckdb"
    status, out, err = contam(*(arg.format(**inputs) for arg in command), "--store", missing)
    assert status != 0 and out == ""
    assert err == f"contam {command[0]}: {missing}: no such store\n"
    assert not (tmp_path / "typo").exists()  # no store, no WAL, no journal, no folder


def test_store_refuses_a_missing_file_unless_told_to_create_it(tmp_path):
    missing = tmp_path / "new" / "s.duckdb"
    with pytest.raises(UserError, match="no such store"):
        Store(missing)
    assert not missing.parent.exists()
    with Store(missing, create=True) as store:
        assert store.count("items") == 0
    with Store(missing) as store:  # from now on it exists, and opens without the flag
        assert store.count("items") == 0


def test_import_items_and_run_start_a_store(tmp_path, contam, emulator):
    from tests.runkit import model_entry, write_config

    items = tmp_path / "items.csv"
    items.write_text("item_id,title,subset,question,reference\ni1,T,official,Q?,R\n",
                     encoding="utf-8")
    status, _, err = contam("import", "items", items, "--store", tmp_path / "a" / "s.duckdb")
    assert status == 0, err
    config = write_config(tmp_path, [model_entry("ollama", emulator())], items=2)
    status, _, err = contam("run", config, "--store", tmp_path / "b" / "s.duckdb", "--no-progress")
    assert status == 0, err
    assert (tmp_path / "a" / "s.duckdb").exists() and (tmp_path / "b" / "s.duckdb").exists()
