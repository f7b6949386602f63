"""Synthetic item/answer/label files of any size, for import tests and the import benchmark."""

from __future__ import annotations

import csv
import random
from pathlib import Path

from contam.harness.labels import LABEL_NAMES

__all__ = ["write_fileset"]

TITLES = (("Pokémon Red", "official"), ("Pokémon Crystal", "official"),
          ("Pokémon Brown", "fan"), ("Pokémon Prism", "fan"))
LABELS = tuple(LABEL_NAMES.values())  # as a person would write them


def write_fileset(folder: Path, n_items: int, models: list[str], seed: int = 0) -> dict[str, Path]:
    """items.csv, answers.csv and labels.csv (a human and a judge rater) in ``folder``."""
    rng = random.Random(seed)
    ids = [f"q{n:06d}" for n in range(n_items)]
    paths = {kind: folder / f"{kind}.csv" for kind in ("items", "answers", "labels")}
    _write(paths["items"], ["item_id", "title", "subset", "question", "reference"],
           ([i, *TITLES[n % 4], f"Question {n}, with a comma?", f"Reference {n}"]
            for n, i in enumerate(ids)))
    _write(paths["answers"], ["item_id", "model", "answer"],
           ([i, m, f"Answer {rng.randint(0, 9)}, \"quoted\" text"] for i in ids for m in models))
    _write(paths["labels"], ["item_id", "model", "rater", "label"],
           ([i, m, rater, rng.choice(LABELS)] for i in ids for m in models
            for rater in ("human", "judge:sonnet")))
    return paths


def _write(path: Path, header: list[str], rows) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
