"""Helpers for the any-study tests: the worked example `examples/own-items/` pointed at a test's
emulator and store, its items imported through their --map."""

from __future__ import annotations

import re
from pathlib import Path

from contam.harness.jobs.importing import import_file
from contam.harness.store import Store

__all__ = ["EXAMPLE", "MAP", "SYSTEM", "TEMPLATE", "example_config", "import_example_items"]

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "own-items"
MAP = "item_id=id,question=prompt,reference=answer,subset=tier"
SYSTEM = "Answer from memory only. Do not look anything up. Reply with a bare answer."
TEMPLATE = "Library: {library}\nQuestion: {question}\nReply with the bare name, no {{braces}}."


def example_config(folder: Path, emu, **replace: str) -> Path:
    """The example study.toml in ``folder`` (its rubric beside it), talking to ``emu``, its store
    ``folder/s.duckdb``; ``replace`` sets a top-level line of a table (``user="..."``)."""
    text = (EXAMPLE / "study.toml").read_text(encoding="utf-8")
    text = text.replace("http://127.0.0.1:8765", emu.url).replace(
        'store = "../../runs/own-items.duckdb"', 'store = "s.duckdb"')
    for key, value in replace.items():
        text = re.sub(rf'^{key} = .*$', lambda _: f"{key} = {value}", text, flags=re.MULTILINE)
    (folder / "rubric.txt").write_text((EXAMPLE / "rubric.txt").read_text(encoding="utf-8"))
    path = folder / "study.toml"
    path.write_text(text, encoding="utf-8")
    return path


def import_example_items(store_path: Path) -> None:
    with Store(store_path, create=True) as store:
        import_file(store, "items", EXAMPLE / "items.jsonl", column_map=MAP)
