"""Shared by the benchmark scripts: an items file, a three-provider config pointing at an emulator
(bench_batch.py, batch_kill9.py), and reading a store's answers and failed attempts per cell."""

from __future__ import annotations

import csv
from pathlib import Path

from contam.harness.prompts import DEFAULT_SYSTEM_PROMPT, question_request
from contam.harness.provider_names import BATCH_PROVIDERS
from contam.harness.store import Store

PROVIDERS = BATCH_PROVIDERS  # every provider with a batch API
KEYS = {"OPENAI_API_KEY": "sk-batch-bench", "GEMINI_API_KEY": "gm-batch-bench",
        "ANTHROPIC_API_KEY": "an-batch-bench"}
TITLE = "Pokémon Red"


def write_items(path: Path, n: int) -> None:
    """An items CSV of ``n`` questions, ids q000000 onwards, all about ``TITLE``."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "title", "subset", "question", "reference"])
        writer.writerows([f"q{i:06d}", TITLE, "official", f"Question {i}?", f"Ref {i}"]
                         for i in range(n))


def write_setup(folder: Path, items: int, base_url: str) -> Path:
    """items.csv and run.toml (one model per batch provider) in ``folder``; the config's path."""
    write_items(folder / "items.csv", items)
    entries = [f'[[models]]\nname = "{p}-m"\nprovider = "{p}"\nmodel = "emu-{p}"\n'
               f'base_url = "{base_url}{"/v1" if p == "openai" else ""}"\nconcurrency = 64\n'
               for p in PROVIDERS]
    config = folder / "run.toml"
    config.write_text('items = "items.csv"\n\n' + "\n".join(entries), encoding="utf-8")
    return config


def answers(store_path: Path) -> dict[tuple[str, str], str]:
    with Store(store_path, read_only=True) as store:
        rows = store.query("SELECT item_id, model, answer_raw FROM latest_answers")
    return {(item, model): text for item, model, text in rows}


def server_key(item_id: str, model: str) -> tuple[str, str, str]:
    """How the emulator counts a cell's batch lines: (API, model id, question text)."""
    provider = model.removesuffix("-m")
    number = int(item_id[1:])
    user = question_request(DEFAULT_SYSTEM_PROMPT, TITLE, f"Question {number}?").user
    return provider, f"emu-{provider}", user


def failed_attempts(store_path: Path) -> dict[tuple[str, str], int]:
    with Store(store_path, read_only=True) as store:
        rows = store.query("SELECT item_id, model, count(*) FROM attempts "
                           "WHERE outcome <> 'ok' GROUP BY ALL")
    return {(item, model): n for item, model, n in rows}
