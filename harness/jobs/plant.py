"""``contam plant CONFIG --model NAME --as NEW``: fine-tune a local model on a seeded share of the
study's items, so that the probes can be checked against contamination whose extent is known.

Which items: a share of each subset (stratified), drawn by a generator seeded with ``--seed``.
What it learns (``--format``): ``text`` is pre-training style, each item's min-k text (the study's
``[probes] text`` rule, else title, question and reference); ``qa`` is instruction-tuning style,
the study's question in the model's chat template with the reference as the reply. How: a full
fine-tune (:mod:`contam.harness.jobs.plant_train`). What it leaves: ``planted:NEW`` in contam's model cache
(``provider = "local"`` loads it), and a ``plantings`` row in the store. ``--epochs 1,3,10`` makes
one model per dose, named ``NEW-e1``, ``NEW-e3``, ``NEW-e10``, from one run of 10 epochs. The same
arguments again reuse the saved models (ARCHITECTURE.md, Where an addition goes).
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from contam.harness.config import ModelSpec, RunConfig, load_config
from contam.harness.display import BatchProgress
from contam.harness.errors import UserError
from contam.harness.jobs.lane_job import import_config_items
from contam.harness.jobs.options.plant import (
    DEFAULT_BATCH_SIZE, DEFAULT_LEARNING_RATE, DEFAULT_MAX_LENGTH, PlantOptions,
)
from contam.harness.jobs.probe_work import probe_item
from contam.harness.jobs.run import run_prompt
from contam.harness.prompts import text_rule
from contam.harness.store import DEFAULT_STORE, Store
from contam.harness.store.cells import first_items, item_columns
from contam.harness.store.plantings import has_planting, record_planting
from contam.harness.store.store import utc_now
from contam.metrics.probe_mink import scored_text
from contam.metrics.probes import ProbeItem

__all__ = ["PlantOptions", "PlantResult", "plant", "dose_names", "choose_planted",
           "DEFAULT_LEARNING_RATE", "DEFAULT_BATCH_SIZE", "DEFAULT_MAX_LENGTH"]

@dataclass
class PlantResult:
    """What was planted (or reused): one line per dose."""

    names: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def plant(config_path: str | Path, *, store: str | Path | None = None,
          options: PlantOptions) -> PlantResult:
    """Plants every dose that is not saved yet, and records each dose in the store."""
    started = time.perf_counter()
    options.check()
    config = load_config(config_path, store_flag=str(store) if store else None)
    spec = _local_model(config, options.model)
    with Store(config.store or DEFAULT_STORE, create=True) as opened:
        import_config_items(opened, config)
        items = [probe_item(row) for row in first_items(opened, None)]
        planted = choose_planted(items, options.share, options.seed)
        texts = _training_texts(opened, config, planted, options.format)
    BatchProgress.note(f"plant {options.name}: loading torch and transformers")
    from contam.harness.jobs.plant_run import plant_doses  # torch and transformers load only here

    ids = [item.item_id for item in planted]
    doses = plant_doses(spec, texts, options, dose_names(options.name, options.epochs),
                        lambda epochs: arguments(spec, ids, options, epochs))
    with Store(config.store or DEFAULT_STORE) as opened:
        result = _record(opened, doses)
    result.lines.append(_total_line(doses, time.perf_counter() - started))
    return result


def _total_line(doses: Sequence[dict[str, Any]], total_s: float) -> str:
    """The command's own time beside the training's: loading and saving are part of it."""
    trained = [dose["row"]["wall_s"] for dose in doses if not dose["reused"]]
    training = f"training {max(trained):.0f} s" if trained else "nothing trained"
    return f"done in {total_s:.0f} s in all ({training})"


def _local_model(config: RunConfig, name: str) -> ModelSpec:
    """The configured model ``name``; only a local model's weights can be fine-tuned."""
    found = [spec for spec in config.models if spec.name == name]
    if not found:
        known = ", ".join(spec.name for spec in config.models) or "none"
        raise UserError(f"{config.path}: no model named {name!r} (configured: {known})")
    if found[0].provider != "local":
        raise UserError(f"model {name!r} is provider {found[0].provider!r}; only "
                        "provider = \"local\" models can be fine-tuned (their weights are on disk)")
    return found[0]


def choose_planted(items: Sequence[ProbeItem], share: float, seed: int) -> list[ProbeItem]:
    """``share`` of each subset's items (rounded, at least one where the subset has two or
    more), drawn by a generator seeded with ``seed`` and the subset; in item order."""
    by_subset: dict[str, list[ProbeItem]] = defaultdict(list)
    for item in items:
        by_subset[item.subset].append(item)
    chosen: set[str] = set()
    for subset, members in sorted(by_subset.items()):
        ids = sorted(item.item_id for item in members)
        random.Random(f"{seed}:{subset}").shuffle(ids)
        count = max(1, round(share * len(ids))) if len(ids) > 1 else round(share * len(ids))
        chosen.update(ids[:count])
    return [item for item in items if item.item_id in chosen]


def _training_texts(store: Store, config: RunConfig, items: Sequence[ProbeItem],
                    format: str) -> list[tuple[str, ...]]:
    """Per item: ``(text,)`` for text, ``(system, user, reference)`` for qa."""
    if format == "text":
        rule = text_rule(config.study.probe_text, item_columns(store),
                         f"{config.path}: [probes] text")
        return [(scored_text(item, rule),) for item in items]
    prompt = run_prompt(store, config)
    requests = [prompt.request(item.values) for item in items]
    return [(r.system, r.user, item.reference) for r, item in zip(requests, items)]


def dose_names(name: str, epochs: Sequence[int]) -> dict[int, str]:
    """One model per dose: ``NAME`` for a single dose, ``NAME-eN`` for each of several."""
    if len(epochs) == 1:
        return {epochs[0]: name}
    return {dose: f"{name}-e{dose}" for dose in sorted(set(epochs))}


def _record(store: Store, doses: Sequence[dict[str, Any]]) -> PlantResult:
    """A ``plantings`` row per dose the store does not hold yet; a line per dose."""
    result = PlantResult()
    for dose in doses:
        row = dose["row"]
        if not has_planting(store, row["name"], row["weights_sha256"]):
            record_planting(store, {**row, "created_at": utc_now()})
        result.names.append(row["name"])
        losses = ", ".join(f"{loss:.3f}" for loss in row["loss_per_epoch"])
        how = ("reused the saved model" if dose["reused"]
               else f"training {row['wall_s']:.0f} s")
        result.lines.append(f"{row['name']}: {row['epochs']} epoch(s) on "
                            f"{len(row['planted_items'])} items ({row['format']}), loss per "
                            f"epoch {losses}; {how}; use provider = \"local\", "
                            f"model = \"{row['name']}\"")
    return result


def arguments(spec: ModelSpec, planted_ids: Sequence[str], options: PlantOptions,
              epochs: int) -> dict[str, Any]:
    """What makes a planted model what it is: a saved model with other arguments is not reused."""
    settings = asdict(options)
    for not_part in ("name", "epochs", "progress"):
        settings.pop(not_part)
    return {**settings, "base_model": spec.model, "epochs": epochs,
            "planted_items": sorted(planted_ids)}
