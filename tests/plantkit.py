"""A tiny causal LM whose word-level vocabulary covers a set of items, for ``contam plant``'s
tests: two Llama layers built from a transformers config (no download), fast to fine-tune on the
CPU, and a chat template so that ``--format qa`` works. Also a config naming it as a local model."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from tests.tiny_lm import tiny_model_folder

__all__ = ["item_words", "tiny_folder", "plant_config", "write_items"]

CHAT_TEMPLATE = ("{% for message in messages %}{{ message['role'] }} : {{ message['content'] }} "
                 "</s> {% endfor %}{% if add_generation_prompt %}assistant : {% endif %}")


def item_words(items_csv: Path) -> list[str]:
    """Every word and punctuation mark of the items' text columns, lower-cased, in first-seen order."""
    words: dict[str, None] = {}
    with items_csv.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            for column in ("title", "question", "reference"):
                words.update(dict.fromkeys(re.findall(r"\w+|[^\w\s]", row[column].lower())))
    return list(words)


def tiny_folder(folder: Path, words: list[str], *, seed: int = 0) -> Path:
    """A two-layer Llama over ``words`` (plus chat roles) saved to ``folder``; returns it."""
    roles = ["system", "user", "assistant", ":", "\n"]
    return tiny_model_folder(folder, seed=seed, chat=True, words=[*roles, *words],
                             template=CHAT_TEMPLATE, layers=2, hidden=32)


def write_items(path: Path, count: int = 12) -> Path:
    """``count`` items, half in subset ``a`` and half in ``b``, each its own words."""
    rows = ["item_id,title,subset,question,reference"]
    rows += [f"i{n:02d},Place {n},{'ab'[n % 2]},What is kept in hall {n}?,Lamp number {n}"
             for n in range(count)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def plant_config(path: Path, *, items: Path, model: str, store: Path, extra: str = "") -> Path:
    """A study config whose model ``base`` is the local model ``model``."""
    path.write_text(f'store = "{store}"\nitems = "{items}"\n\n[[models]]\nname = "base"\n'
                    f'provider = "local"\nmodel = "{model}"\n{extra}', encoding="utf-8")
    return path
