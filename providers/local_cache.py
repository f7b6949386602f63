"""A converted copy of a GGUF model on disk, so that only the first load pays for the conversion.

transformers reads a GGUF file by parsing it three times (tokenizer, config, weights) and
de-quantising every tensor: about 20 s for SmolLM2-135M on two idle cores, a minute on a busy
machine. The de-quantised weights are what generation uses anyway, so the first load saves them
as an ordinary transformers folder (safetensors, config, tokenizer), which later loads read in
about a second, with the same weights. The folder's name carries the GGUF file's size and
modification time and the transformers version: a changed file or library makes a new copy.
The copy is written to a temporary folder and renamed into place, so a killed conversion leaves
nothing half-written for a later load to trust. A cache that cannot be written only means the
next load converts again. The copy's ``config.json`` names the model class (``architectures``), as
any saved transformers model's does: servers such as ``transformers serve`` refuse a folder
without it; a copy written before that gains it on its next load (:func:`name_architecture`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["CACHE_ENV", "cache_root", "find_converted", "save_converted", "name_architecture",
           "PLANTED_PREFIX", "PLANTED_MARKER", "planted_root", "planted_dir", "finished_planting"]

CACHE_ENV = "CONTAM_CACHE_DIR"
_WEIGHTS = "model.safetensors"


def cache_root() -> Path:
    """``$CONTAM_CACHE_DIR``, else ``$XDG_CACHE_HOME/contam/models``, else ``~/.cache/contam/models``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "contam" / "models"


def _converted_dir(gguf: Path) -> Path:
    import transformers

    stat = gguf.stat()
    return cache_root() / f"{gguf.stem}-{stat.st_size}-{stat.st_mtime_ns}-tf{transformers.__version__}"


def find_converted(gguf: Path) -> Path | None:
    """The converted copy of ``gguf``, when a complete one exists."""
    folder = _converted_dir(gguf)
    return folder if (folder / _WEIGHTS).is_file() and (folder / "config.json").is_file() else None


def save_converted(gguf: Path, model: Any, tokenizer: Any) -> Path | None:
    """Writes the copy; None when the cache cannot be written (read-only home, full disk)."""
    target = _converted_dir(gguf)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".converting-", dir=target.parent))
    except OSError:
        return None
    try:
        _write(staging, model, tokenizer)
        staging.rename(target)  # fails if another process got there first: theirs is as good
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        return None
    return target


def _write(folder: Path, model: Any, tokenizer: Any) -> None:
    from safetensors.torch import save_model

    save_model(model, str(folder / _WEIGHTS))  # drops the tied lm_head copy
    model.generation_config.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    _save_plain_config(model, folder)


def _save_plain_config(model: Any, folder: Path) -> None:
    """The model's config without the GGUF quantisation entry (the copy is plain float weights),
    naming the model's class."""
    model.config.save_pretrained(folder)
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config.pop("quantization_config", None)
    config["architectures"] = [type(model).__name__]
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")


def name_architecture(folder: Path, model: Any) -> None:
    """Adds ``architectures`` to a converted copy's config that lacks it (copies written before
    it was added), by a rename, so a reader never sees half a file; a cache that cannot be
    written is left as it is."""
    path = folder / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
        if config.get("architectures"):
            return
        config["architectures"] = [type(model).__name__]
        staging = path.with_name(f".config.json.{os.getpid()}")
        staging.write_text(json.dumps(config, indent=2), encoding="utf-8")
        staging.replace(path)
    except (OSError, ValueError):
        return


# -- planted models (``contam plant``): ``planted:NAME`` is a folder under the cache ---------------

PLANTED_PREFIX = "planted:"
PLANTED_MARKER = "planting.json"  # written last, before the rename: its presence means complete


def planted_root() -> Path:
    """Where ``contam plant`` leaves its models: ``planted/`` under :func:`cache_root`."""
    return cache_root() / "planted"


def planted_dir(name: str) -> Path:
    """The folder of the planted model ``name`` (without the ``planted:`` prefix)."""
    return planted_root() / name


def finished_planting(name: str) -> Path | None:
    """The folder of ``planted:name`` when it was completely written (its marker is there)."""
    folder = planted_dir(name)
    return folder if (folder / PLANTED_MARKER).is_file() and (folder / "config.json").is_file() else None
