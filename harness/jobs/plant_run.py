"""The doses of one ``contam plant``: which are saved already (and reused), and one fine-tune up
to the largest missing dose that saves each missing dose on the way, under the live display
(epoch, loss, time left). Imported only when a plant runs: it loads torch."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from contam.harness.declare import flag_of
from contam.harness.jobs.options.plant import PlantOptions
from contam.harness.config import ModelSpec
from contam.harness.display import BatchProgress
from contam.harness.errors import UserError
from contam.harness.jobs.plant_train import (
    Example, TrainSettings, chat_example, library_versions, load_base, save_planted,
    sweep_abandoned, text_example, train,
)
from contam.providers.base import Fatal
from contam.providers.local import transformers_folder
from contam.providers.local_cache import PLANTED_MARKER, PLANTED_PREFIX, finished_planting

__all__ = ["plant_doses"]

Arguments = Callable[[int], dict[str, Any]]  # a dose's defining arguments, by its epochs


def plant_doses(spec: ModelSpec, texts: Sequence[tuple[str, ...]], options: Any,
                names: dict[int, str], arguments: Arguments) -> list[dict[str, Any]]:
    """Each dose as ``{"reused": bool, "row": the plantings row}``, in dose order."""
    sweep_abandoned()
    doses, missing = [], []
    for epochs, name in sorted(names.items()):
        saved = _saved(name, arguments(epochs))
        if saved is None:
            missing.append(epochs)
        else:
            doses.append({"reused": True, "row": saved})
    if missing:
        doses += _fine_tune(spec, texts, options, {e: names[e] for e in missing}, arguments)
    return sorted(doses, key=lambda dose: dose["row"]["epochs"])


def _saved(name: str, wanted: dict[str, Any]) -> dict[str, Any] | None:
    """The saved dose's row when it was made with the same arguments; refused when with others."""
    folder = finished_planting(name)
    if folder is None:
        return None
    marker = json.loads((folder / PLANTED_MARKER).read_text(encoding="utf-8"))
    if marker.get("arguments") != json.loads(json.dumps(wanted)):
        raise UserError(f"{PLANTED_PREFIX}{name} already exists in {folder.parent}, "
                        f"made with other arguments; choose another {flag_of(PlantOptions, 'name')}")
    return {**marker["row"], "weights_sha256": marker["weights_sha256"]}


def _fine_tune(spec: ModelSpec, texts: Sequence[tuple[str, ...]], options: Any,
               names: dict[int, str], arguments: Arguments) -> list[dict[str, Any]]:
    """One run to the largest dose; each dose's model is saved at the end of its epoch."""
    tokenizer, model = _base(spec, options)
    BatchProgress.note(f"plant {options.name}: tokenizing {len(texts)} training examples")
    examples = [_example(tokenizer, text, options.max_length) for text in texts]
    settings = TrainSettings(epochs=max(names), learning_rate=options.learning_rate,
                             batch_size=options.batch_size, max_length=options.max_length,
                             seed=options.seed, device=options.device)
    steps = math.ceil(len(examples) / settings.batch_size)
    task = BatchProgress(options.progress).task(f"plant {options.name}", settings.epochs * steps,
                                                unit="steps")
    started, losses, saved = time.perf_counter(), [], []

    def on_step(epoch: int, number: int, loss: float) -> None:
        task.describe(f"plant {options.name}: epoch {epoch}/{settings.epochs}, loss {loss:.3f}")
        task.advance(1)

    def on_epoch(epoch: int, loss: float, trained: Any) -> None:
        losses.append(loss)
        if epoch in names:
            row = _row(spec, names[epoch], arguments(epoch), losses,
                       time.perf_counter() - started)
            sha = save_planted(trained, tokenizer, names[epoch],
                               {"arguments": arguments(epoch), "row": row})
            saved.append({"reused": False, "row": {**row, "weights_sha256": sha}})

    with task:
        train(model, examples, settings, _pad_id(tokenizer), on_step=on_step, on_epoch=on_epoch)
    return saved


def _base(spec: ModelSpec, options: Any) -> tuple[Any, Any]:
    import torch

    if options.device.startswith("cuda") and not torch.cuda.is_available():
        raise UserError(f"{flag_of(PlantOptions, 'device')} cuda: no CUDA device is available")
    try:
        folder = transformers_folder(spec.model)
        # the silent minute before the first step: say what it is spent on
        BatchProgress.note(f"plant {options.name}: loading base model {spec.name} "
                           f"({spec.model}) from {folder} onto {options.device}")
        return load_base(folder, options.device)
    except Fatal as exc:
        raise UserError(str(exc)) from None


def _example(tokenizer: Any, text: tuple[str, ...], max_length: int) -> Example:
    if len(text) == 1:
        return text_example(tokenizer, text[0], max_length)
    if not tokenizer.chat_template:
        raise UserError(f"{flag_of(PlantOptions, 'format')} qa needs a model with a chat template")
    return chat_example(tokenizer, *text, max_length=max_length)


def _pad_id(tokenizer: Any) -> int:
    """Padding is masked out of attention and loss, so any id will do: the pad, else the end."""
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if candidate is not None:
            return int(candidate)
    return 0


def _row(spec: ModelSpec, name: str, arguments: dict[str, Any], losses: Sequence[float],
         wall_s: float) -> dict[str, Any]:
    """The ``plantings`` row of one dose (less its weights' hash and time of recording)."""
    return {"name": f"{PLANTED_PREFIX}{name}", "base_name": spec.name,
            "base_model": spec.model, "planted_items": arguments["planted_items"],
            "format": arguments["format"], "share": arguments["share"],
            "epochs": arguments["epochs"], "learning_rate": arguments["learning_rate"],
            "batch_size": arguments["batch_size"], "max_length": arguments["max_length"],
            "seed": arguments["seed"], "device": arguments["device"],
            "loss_per_epoch": list(losses), "versions": library_versions(), "wall_s": wall_s}
