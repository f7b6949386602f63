"""A config's ``[items] path`` and ``map``: `contam run` reads the items file through the same
column map as `contam import items --map`, and gets the same items; a bad map is one line naming
the config; ``items = "FILE"`` is the same as ``[items] path = "FILE"``."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from contam.harness.config import load_config
from tests.ownitemskit import EXAMPLE, MAP

FROM_FILE = EXAMPLE / "from-file.toml"  # the worked example of [items] path and map

ITEM_COLUMNS = "SELECT item_id, title, subset, question, reference, extra FROM items ORDER BY item_id"


def example_copy(folder: Path, url: str = "http://127.0.0.1:1") -> Path:
    """examples/own-items/from-file.toml and its items in ``folder``, talking to ``url``."""
    shutil.copy(EXAMPLE / "items.jsonl", folder / "items.jsonl")
    text = FROM_FILE.read_text(encoding="utf-8").replace("http://127.0.0.1:8765", url)
    (folder / "from-file.toml").write_text(text, encoding="utf-8")
    return folder / "from-file.toml"


def items_of(store: Path) -> list[tuple]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(ITEM_COLUMNS).fetchall()


def test_the_items_table_is_read_with_its_path_and_map() -> None:
    config = load_config(FROM_FILE)
    assert config.items == EXAMPLE / "items.jsonl"
    assert config.items_map == {"item_id": "id", "question": "prompt", "reference": "answer",
                                "subset": "tier"}


def test_the_short_form_is_the_items_table_without_a_map(tmp_path: Path) -> None:
    short, table = tmp_path / "short.toml", tmp_path / "table.toml"
    short.write_text('items = "x.csv"\n', encoding="utf-8")
    table.write_text('[items]\npath = "x.csv"\n', encoding="utf-8")
    assert load_config(short).items == load_config(table).items == tmp_path / "x.csv"
    assert load_config(short).items_map == load_config(table).items_map == {}


def test_run_reads_the_file_as_import_items_with_the_same_map_does(tmp_path, emulator, monkeypatch,
                                                                   contam) -> None:
    monkeypatch.setenv("CONTAM_EMULATOR_KEY", "anything")
    emu = emulator()
    status, _, err = contam("import", "items", EXAMPLE / "items.jsonl", "--map", MAP,
                            "--store", tmp_path / "imported.duckdb")
    assert status == 0, err
    config = example_copy(tmp_path, emu.url)
    status, out, err = contam("run", config, "--store", tmp_path / "s.duckdb", "--no-progress")
    assert status == 0, err
    assert "6 items read, 6 added" in out
    imported = items_of(tmp_path / "imported.duckdb")
    assert len(imported) == 6 and items_of(tmp_path / "s.duckdb") == imported


@pytest.mark.parametrize(("entry", "problem"), [
    ('item_idd = "id"', "{config}: [items] map: 'item_idd' is not a column of items"),
    ('item_id = "ident"', "[items] map names column 'ident', which the file lacks"),
])
def test_a_bad_map_is_one_line_naming_the_items_table(tmp_path, contam, entry, problem) -> None:
    config = tmp_path / "study.toml"
    config.write_text(f'store = "s.duckdb"\n[items]\npath = "{EXAMPLE / "items.jsonl"}"\n'
                      f'map = {{ {entry} }}\n[[models]]\nprovider = "ollama"\nmodel = "m"\n',
                      encoding="utf-8")
    status, out, err = contam("run", config, "--no-progress")
    assert status == 2 and err.count("\n") == 1, err
    assert problem.format(config=config) in err
