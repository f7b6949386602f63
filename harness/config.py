"""Run config (TOML) -> validated, immutable objects. See DESIGN.md "Run config"."""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from harness.errors import UserError

__all__ = ["ModelSpec", "RunConfig", "load_config", "model_names", "parse_model", "PROVIDERS",
           "BATCH_PROVIDERS", "DEFAULT_SYSTEM_PROMPT"]

DEFAULT_SYSTEM_PROMPT = (
    "Answer from memory only. Do not look anything up. Reply with a bare 1-2 sentence answer."
)

PROVIDERS = ("openai", "gemini", "anthropic", "ollama", "local")
# Providers with a batch API (providers.batch.BATCH_PROTOCOLS; a test keeps the two equal).
BATCH_PROVIDERS = ("openai", "anthropic", "gemini")


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """One configured model: the ``[[models]]`` (or ``[judge]``) table of a run config."""

    name: str  # the user's label, stored in `model`
    provider: str  # openai | gemini | anthropic | ollama | local
    model: str  # the provider's model id
    base_url: str | tuple[str, ...] | None = None  # a tuple: replicas of one served model
    api_key_env: str | None = None
    rpm: float | None = None
    tpm: float | None = None
    concurrency: int = 8
    max_attempts: int = 5
    timeout_s: float = 60.0
    params: dict[str, Any] = field(default_factory=dict)
    batch: bool = False  # ask through the provider's batch API (BATCH_PROVIDERS only)

    def public_dict(self) -> dict[str, Any]:
        """What may be stored in `runs.config`: everything but secrets (there are none here:
        only the *name* of the key's environment variable is kept, never its value)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def replica_urls(self) -> tuple[str | None, ...]:
        """One entry per replica: the listed URLs, or the one ``base_url`` (None: the default)."""
        return self.base_url if isinstance(self.base_url, tuple) else (self.base_url,)

    def for_replica(self, url: str | None) -> "ModelSpec":
        """This model as one replica's provider sees it: a single ``base_url``."""
        return dataclasses.replace(self, base_url=url)


_MODEL_KEYS = {f.name for f in fields(ModelSpec)}
_TOP_KEYS = {"store", "items", "prompt", "models", "judge"}
_POSITIVE = ("rpm", "tpm", "concurrency", "max_attempts", "timeout_s")


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    path: Path
    store: str | None
    items: Path | None
    system_prompt: str
    models: tuple[ModelSpec, ...]
    judge: ModelSpec | None

    def select(self, names: list[str] | None) -> tuple[ModelSpec, ...]:
        """The models named by ``--models a,b``, in config order; all when none are named."""
        if not names:
            return self.models
        known = {m.name for m in self.models}
        missing = [n for n in names if n not in known]
        if missing:
            raise UserError(f"{self.path}: no [[models]] entry named {', '.join(missing)}")
        return tuple(m for m in self.models if m.name in names)


def load_config(path: str | Path) -> RunConfig:
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: no such config file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: invalid TOML ({exc})") from None
    return _build(path, raw)


def _build(path: Path, raw: dict[str, Any]) -> RunConfig:
    _refuse_unknown(path, "top level", raw, _TOP_KEYS)
    prompt = raw.get("prompt", {})
    _refuse_unknown(path, "[prompt]", prompt, {"system"})
    models = tuple(parse_model(path, f"[[models]] #{n}", entry)
                   for n, entry in enumerate(raw.get("models", []), start=1))
    _refuse_duplicate_names(path, models)
    judge = raw.get("judge")
    return RunConfig(
        path=path,
        store=raw.get("store"),
        items=(path.parent / raw["items"]) if raw.get("items") else None,
        system_prompt=prompt.get("system", DEFAULT_SYSTEM_PROMPT),
        models=models,
        judge=parse_model(path, "[judge]", judge) if judge else None,
    )


def parse_model(path: Path, where: str, entry: dict[str, Any]) -> ModelSpec:
    if not isinstance(entry, dict):
        raise UserError(f"{path}: {where} must be a table")
    _refuse_unknown(path, where, entry, _MODEL_KEYS)
    for key in ("provider", "model"):
        if not entry.get(key):
            raise UserError(f"{path}: {where} needs '{key}'")
    if entry["provider"] not in PROVIDERS:
        raise UserError(f"{path}: {where}: provider {entry['provider']!r} is not one of "
                        f"{', '.join(PROVIDERS)}")
    _refuse_non_positive(path, where, entry)
    _refuse_bad_batch(path, where, entry)
    return ModelSpec(**{**entry, "name": entry.get("name") or entry["model"],
                        "base_url": _base_url(path, where, entry.get("base_url")),
                        "params": dict(entry.get("params", {}))})


def _base_url(path: Path, where: str, value: Any) -> str | tuple[str, ...] | None:
    """A URL, or a non-empty list of URLs (replicas), which becomes a tuple."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(url, str) and url for url in value):
        return tuple(value)
    raise UserError(f"{path}: {where}: 'base_url' must be a URL or a non-empty list of URLs, "
                    f"not {value!r}")


def _refuse_unknown(path: Path, where: str, table: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise UserError(f"{path}: {where}: unknown key {unknown[0]!r}")


def _refuse_non_positive(path: Path, where: str, entry: dict[str, Any]) -> None:
    for key in _POSITIVE:
        value = entry.get(key)
        if value is not None and (not isinstance(value, int | float) or value <= 0):
            raise UserError(f"{path}: {where}: '{key}' must be a positive number, not {value!r}")


def _refuse_bad_batch(path: Path, where: str, entry: dict[str, Any]) -> None:
    batch = entry.get("batch", False)
    if not isinstance(batch, bool):
        raise UserError(f"{path}: {where}: 'batch' must be true or false, not {batch!r}")
    if batch and entry["provider"] not in BATCH_PROVIDERS:
        raise UserError(f"{path}: {where}: 'batch = true' needs a provider with a batch API "
                        f"({', '.join(BATCH_PROVIDERS)}), not {entry['provider']!r}")
    if batch and isinstance(entry.get("base_url"), list):
        raise UserError(f"{path}: {where}: 'batch = true' sends to one batch API, not to "
                        "replicas: give one base_url")


def _refuse_duplicate_names(path: Path, models: tuple[ModelSpec, ...]) -> None:
    seen: set[str] = set()
    for spec in models:
        if spec.name in seen:
            raise UserError(f"{path}: two [[models]] entries are named {spec.name!r}")
        seen.add(spec.name)


def model_names(models: str | None) -> list[str] | None:
    """``--models a,b`` as a list of names; None when none are given."""
    names = [name.strip() for name in models.split(",") if name.strip()] if models else []
    return names or None
