"""A seeded study store for the study-section tests: 90 items in three tiers with an exposure
column and a release date (extra columns, as `contam import items` keeps them), two models whose
chance of a right answer rises with exposure, human labels on two thirds of the cells and judge
labels on the rest; and the study config that names the columns and the models' cut-offs."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

from contam.harness.store import Store, utc_now

__all__ = ["MODELS", "TIERS", "CUTOFFS", "Truth", "build_study_store", "write_study_config"]

MODELS = ("model-a", "model-b")
TIERS = ("official", "popular-hack", "obscure-hack")
CUTOFFS = {"model-a": "2024-06-30", "model-b": "2025-01-31"}
JUDGE = "judge:emu"


@dataclass
class Truth:
    """What the store holds, cell by cell, to check the report against independently."""

    item_ids: list[str]
    exposure: dict[str, float]
    released: dict[str, datetime.date]
    tier: dict[str, str]
    correct: dict[tuple[str, str], int]  # (item, model) -> 1 right / 0 not
    source: dict[tuple[str, str], str]  # "human" or "judge"


def build_study_store(path: Path, *, items: int = 90, seed: int = 7,
                      bad_exposure: str | None = None, bad_released: str | None = None,
                      labels: bool = True) -> Truth:
    """The store at ``path``; ``bad_exposure`` / ``bad_released`` replace item i017's value."""
    rng = np.random.default_rng(seed)
    truth = Truth([], {}, {}, {}, {}, {})
    rows, answers, rated = [], [], []
    for i in range(items):
        item_id, tier = f"i{i:03d}", TIERS[i % 3]
        exposure = round(float(rng.uniform(0, 4)) + (2 - i % 3) * 0.8, 3)
        released = datetime.date(2023, 6, 1) + datetime.timedelta(days=int(rng.integers(0, 700)))
        truth.item_ids.append(item_id)
        truth.exposure[item_id], truth.released[item_id], truth.tier[item_id] = exposure, released, tier
        extra = {"exposure": str(exposure), "released": released.isoformat()}
        if i == 17:
            extra["exposure"] = extra["exposure"] if bad_exposure is None else bad_exposure
            extra["released"] = extra["released"] if bad_released is None else bad_released
        rows.append(_item(item_id, tier, extra, path))
        for m, model in enumerate(MODELS):
            right = int(rng.random() < 1 / (1 + np.exp(-(-2.5 + 1.1 * exposure - 0.8 * m))))
            answers.append(_answer(item_id, model, right))
            source = "judge" if i % 3 == 2 and m == 0 or i % 5 == 4 else "human"
            label = "right" if right else ("partial" if rng.random() < 0.2 else "wrong")
            rated.append(_label(item_id, model, "human" if source == "human" else JUDGE, label))
            truth.correct[(item_id, model)], truth.source[(item_id, model)] = right, source
    with Store(path, create=True) as store:
        store.append("items", rows)
        store.append("answers", answers)
        if labels:
            store.append("labels", rated)
    return truth


def _item(item_id: str, tier: str, extra: dict, path: Path) -> dict:
    return {"item_id": item_id, "title": f"Title {tier}", "subset": tier, "question": f"Q {item_id}?",
            "reference": f"A {item_id}", "extra": orjson.dumps(extra).decode(),
            "source_file": str(path.with_name("items.csv")), "added_at": utc_now()}


def _answer(item_id: str, model: str, right: int) -> dict:
    text = f"A {item_id}" if right else "something else"
    return {"run_id": "r1", "item_id": item_id, "model": model, "provider": "import",
            "answer_raw": text, "answer": text, "created_at": utc_now()}


def _label(item_id: str, model: str, rater: str, label: str) -> dict:
    return {"item_id": item_id, "model": model, "rater": rater, "label": label, "created_at": utc_now()}


def write_study_config(folder: Path, *, exposure: str | None = "exposure", released: str | None = "released",
                       subsets: tuple[str, ...] = TIERS, cutoffs: dict[str, str] = CUTOFFS) -> Path:
    lines = ["[study]"]
    if exposure:
        lines.append(f'exposure = "{exposure}"')
    if released:
        lines.append(f'released = "{released}"')
    if subsets:
        lines.append("subsets = [" + ", ".join(f'"{s}"' for s in subsets) + "]")
    for model in MODELS:
        lines += ["", "[[models]]", f'name = "{model}"', 'provider = "openai"', f'model = "{model}"']
        if model in cutoffs:
            lines.append(f'cutoff = "{cutoffs[model]}"')
    path = folder / "study.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
