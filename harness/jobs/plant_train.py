"""The torch side of ``contam plant``: the training examples, a full fine-tune with AdamW, and the
planted model written to contam's model cache so that nothing half-written is ever taken for
finished (ARCHITECTURE.md, Where an addition goes).

The learning rate is constant (no warm-up, no decay), and each epoch's order is drawn from a
generator seeded by (seed, epoch). So training to 10 epochs and keeping the weights after epochs
1 and 3 gives the same models as three separate runs of 1, 3 and 10 epochs: the doses of
``--epochs 1,3,10`` cost one run of 10. On the CPU, torch's deterministic algorithms make two runs
with the same seed give the same weights, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contam.harness.store.discovery import pid_alive
from contam.providers.local_cache import PLANTED_MARKER, planted_dir, planted_root
from contam.providers.local_generate import torch_threads

__all__ = ["TrainSettings", "Example", "text_example", "chat_example", "train", "save_planted",
           "load_base", "weights_sha256", "library_versions", "sweep_abandoned"]

_IGNORE = -100  # the label torch's cross-entropy skips: padding, and a qa example's prompt
_STAGING = ".planting-"


@dataclass(frozen=True)
class TrainSettings:
    """How a model is fine-tuned; every field is recorded with the planting."""

    epochs: int
    learning_rate: float
    batch_size: int
    max_length: int
    seed: int
    device: str


@dataclass(frozen=True)
class Example:
    """One training sequence: its token ids and the labels the loss is taken on."""

    input_ids: list[int]
    labels: list[int]


def text_example(tokenizer: Any, text: str, max_length: int) -> Example:
    """Pre-training style: every token of the text (and the end-of-text token) is learnt."""
    ids = tokenizer(text, add_special_tokens=True)["input_ids"]
    if tokenizer.eos_token_id is not None:
        ids = [*ids, tokenizer.eos_token_id]
    ids = ids[:max_length]
    return Example(input_ids=ids, labels=list(ids))


def chat_example(tokenizer: Any, system: str, user: str, reply: str, max_length: int) -> Example:
    """Instruction-tuning style: the question in the model's chat template, and the loss on the
    reply's tokens only (the prompt is context, as in supervised fine-tuning)."""
    turns = [{"role": "system", "content": system}] if system else []
    turns.append({"role": "user", "content": user})
    prompt = _ids(tokenizer, tokenizer.apply_chat_template(turns, add_generation_prompt=True,
                                                           tokenize=False))
    ids = _ids(tokenizer, tokenizer.apply_chat_template(
        [*turns, {"role": "assistant", "content": reply}], tokenize=False))[:max_length]
    labels = [_IGNORE if i < len(prompt) else token for i, token in enumerate(ids)]
    return Example(input_ids=ids, labels=labels)


def _ids(tokenizer: Any, text: str) -> list[int]:
    """A rendered chat's tokens: the template wrote its special tokens already."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def load_base(folder: Path, device: str) -> tuple[Any, Any]:
    """Tokenizer and model (fp32 weights; bf16 comes from autocast on a GPU) from a folder."""
    from huggingface_hub.utils import disable_progress_bars
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # their tqdm bars would tear through the live display
    disable_progress_bars()
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype="float32")
    return tokenizer, model.to(device)


Step = Callable[[int, int, float], None]  # (epoch, step within it, the batch's loss)
EpochEnd = Callable[[int, float, Any], None]  # (epoch, mean loss, model)


def train(model: Any, examples: Sequence[Example], settings: TrainSettings, pad_id: int, *,
          on_step: Step, on_epoch: EpochEnd) -> list[float]:
    """Fine-tunes ``model`` in place for ``settings.epochs``; returns the mean loss per epoch."""
    import torch

    _seed_everything(settings)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate)
    model.train()
    losses: list[float] = []
    with torch_threads(_threads()):  # restored afterwards: the count is process-wide
        _epochs(model, optimizer, examples, settings, pad_id, losses, on_step, on_epoch)
    model.eval()
    return losses


def _epochs(model: Any, optimizer: Any, examples: Sequence[Example], settings: TrainSettings,
            pad_id: int, losses: list[float], on_step: Step, on_epoch: EpochEnd) -> None:
    for epoch in range(1, settings.epochs + 1):
        batches = _batches(examples, settings, epoch, pad_id)
        total = 0.0
        for number, batch in enumerate(batches, 1):
            loss = _step(model, optimizer, batch, settings.device)
            total += loss
            on_step(epoch, number, loss)
        losses.append(total / len(batches))
        on_epoch(epoch, losses[-1], model)


def _threads() -> int:
    """Half the cores this process may use, as the local provider's generation: on a shared
    machine a thread per core stalls waiting for the busiest core (see providers/local.py)."""
    return max(1, len(os.sched_getaffinity(0)) // 2)


def _seed_everything(settings: TrainSettings) -> None:
    import torch

    torch.manual_seed(settings.seed)
    if settings.device == "cpu":  # CUDA's deterministic kernels need an environment variable
        torch.use_deterministic_algorithms(True, warn_only=True)


def _batches(examples: Sequence[Example], settings: TrainSettings, epoch: int,
             pad_id: int) -> list[dict[str, Any]]:
    """This epoch's shuffled batches, padded on the right (padding is masked and not learnt)."""
    import torch

    order = torch.randperm(len(examples),
                           generator=torch.Generator().manual_seed(settings.seed * 1000 + epoch))
    chosen = [examples[i] for i in order.tolist()]
    size = settings.batch_size
    return [_padded(chosen[i:i + size], pad_id) for i in range(0, len(chosen), size)]


def _padded(batch: Sequence[Example], pad_id: int) -> dict[str, Any]:
    import torch

    width = max(len(e.input_ids) for e in batch)
    def pad(values: list[int], fill: int) -> list[int]:
        return values + [fill] * (width - len(values))
    return {"input_ids": torch.tensor([pad(e.input_ids, pad_id) for e in batch]),
            "attention_mask": torch.tensor([pad([1] * len(e.input_ids), 0) for e in batch]),
            "labels": torch.tensor([pad(e.labels, _IGNORE) for e in batch])}


def _step(model: Any, optimizer: Any, batch: dict[str, Any], device: str) -> float:
    """One optimiser step; bf16 autocast on a GPU, plain fp32 on the CPU."""
    import torch

    batch = {key: value.to(device) for key, value in batch.items()}
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.startswith("cuda")):
        loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(loss.detach())


# -- the saved model ----------------------------------------------------------------------------

def save_planted(model: Any, tokenizer: Any, name: str, marker: dict[str, Any]) -> str:
    """Writes ``planted:name`` to a staging folder, its marker last, then renames it into place
    (one atomic step); returns the weights' sha256. A failure leaves no folder of that name."""
    root = planted_root()
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{_STAGING}{os.getpid()}-", dir=root))
    try:
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        sha = weights_sha256(staging)
        (staging / PLANTED_MARKER).write_text(json.dumps({**marker, "weights_sha256": sha},
                                                         indent=2), encoding="utf-8")
        target = planted_dir(name)
        if target.exists():  # an older planting of other arguments, refused before training
            shutil.rmtree(target)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return sha


def weights_sha256(folder: Path) -> str:
    """sha256 over the folder's safetensors files in name order."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.safetensors")):
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def sweep_abandoned() -> None:
    """Removes staging folders whose process is gone (a ``kill -9`` mid-save); they were never
    renamed, so no load ever took them for a model."""
    root = planted_root()
    for folder in root.glob(f"{_STAGING}*") if root.is_dir() else ():
        pid = folder.name.removeprefix(_STAGING).split("-", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def library_versions() -> dict[str, str]:
    """The versions that made the weights: torch, transformers, tokenizers, safetensors."""
    from importlib.metadata import version

    return {name: version(name) for name in ("torch", "transformers", "tokenizers", "safetensors")}
