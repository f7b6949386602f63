"""Run config (TOML) -> validated, immutable objects. See ARCHITECTURE.md, "The study config"."""

from __future__ import annotations

import datetime
import os
import re
import shlex
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from contam.harness.config_lines import line_of
from contam.harness.config_schema import (PROVIDERS, Field, KeyProblem, check_table, did_you_mean,
                                   fields_of, key, tables_of)
from contam.harness.errors import UserError
from contam.harness.provider_names import BATCH_PROVIDERS
from contam.harness.study import StudySettings
from contam.harness.text import visible
from contam.metrics.metric_registry import METRICS
from contam.metrics.outcome import parse_outcome

__all__ = ["ModelSpec", "RunConfig", "ItemsSource", "CONFIG_TABLES", "load_config", "model_names",
           "parse_model", "PROVIDERS", "BATCH_PROVIDERS", "DEFAULT_SYSTEM_PROMPT"]

DEFAULT_SYSTEM_PROMPT = (
    "Answer from memory only. Do not look anything up. Reply with a bare 1-2 sentence answer."
)


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """One configured model: the ``[[models]]`` (or ``[judge]``) table of a run config.

    Each field's ``key`` metadata is its TOML key's kind (config_schema.Field), so this class is
    also the table's schema (MODEL_FIELDS below)."""

    name: str = field(metadata=key(
        "text", "The model's label in the store's `model` column; default: `model`."))
    provider: str = field(metadata=key(
        "text", "Which API serves it.", required=True, choices=PROVIDERS))
    model: str = field(metadata=key("text", "The provider's model id (or a local model file).",
                                    required=True))
    # One server, or a list of replicas of one served model (a tuple here).
    base_url: str | tuple[str, ...] | None = field(default=None, metadata=key(
        "urls", "The server's URL, or a list of replicas of one served model; unset: the "
        "provider's own."))
    api_key_env: str | None = field(default=None, metadata=key(
        "text", "The environment variable holding the key (never the key itself); unset: the "
        "provider's usual one."))
    rpm: float | None = field(default=None, metadata=key("number", "Requests per minute at most."))
    tpm: float | None = field(default=None, metadata=key("number", "Tokens per minute at most."))
    concurrency: int = field(default=8, metadata=key("count", "Requests in flight at once."))
    max_attempts: int = field(default=5, metadata=key(
        "count", "Tries per request before it is recorded as failed."))
    timeout_s: float = field(default=60.0, metadata=key("number", "Seconds one request may take."))
    max_hint_s: float = field(default=600.0, metadata=key(
        "number", "The longest server-asked wait (Retry-After) a lane accepts; a longer one "
        "stops the lane."))
    params: dict[str, Any] = field(default_factory=dict, metadata=key(
        "table", "Sampling parameters passed to the provider (`temperature`, `max_new_tokens` ...)."))
    batch: bool = field(default=False, metadata=key(
        "flag", "Ask through the provider's batch API (openai, anthropic, gemini)."))
    samples_per_request: int | None = field(default=None, metadata=key(
        "count", "The most completions one probe request asks for (OpenAI `n`, Gemini "
        "`candidateCount`); unset: the provider's limit."))
    # An ISO date in the file (_iso_date).
    cutoff: datetime.date | None = field(default=None, metadata=key(
        "text", "The model's training cut-off, an ISO date (YYYY-MM-DD): `[study] released` "
        "is compared with it."))

    def public_dict(self) -> dict[str, Any]:
        """What may be stored in `runs.config`: everything but secrets (there are none here:
        only the *name* of the key's environment variable is kept, never its value)."""
        public = {f.name: getattr(self, f.name) for f in fields(self)}
        return {**public, "cutoff": self.cutoff.isoformat() if self.cutoff else None}

    def replica_urls(self) -> tuple[str | None, ...]:
        """One entry per replica: the listed URLs, or the one ``base_url`` (None: the default)."""
        return self.base_url if isinstance(self.base_url, tuple) else (self.base_url,)

    def for_replica(self, url: str | None) -> "ModelSpec":
        """This model as one replica's provider sees it: a single ``base_url``."""
        return replace(self, base_url=url)


MODEL_FIELDS = fields_of(ModelSpec)  # a [[models]] table's keys


@dataclass(frozen=True)
class ItemsSource:
    """The ``[items]`` table: the items file and the map of its columns onto contam's (the
    same map ``contam import items --map`` takes). ``items = "FILE"`` is the short form."""

    path: str = field(metadata=key("text", "The items file (CSV, JSONL or Parquet), relative to "
                                   "this file.", required=True, at="items.path", file=True))
    map: dict[str, str] = field(default_factory=dict, metadata=key(
        "table", "contam's column = the file's column, e.g. `{ item_id = \"id\", question = "
        "\"prompt\" }`.", at="items.map"))


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    path: Path
    # Relative paths in the file are relative to the file.
    store: Path | None = field(default=None, metadata=key(
        "text", "The study's append-only DuckDB store (`--store` overrides it).", at="store",
        file=True))
    items: Path | None = field(default=None, metadata=key(
        "source", "The items file, or an `[items]` table with `path` and `map`.", at="items",
        file=True))
    items_map: dict[str, str] = field(default_factory=dict)  # [items] map: contam <- file column
    system_prompt: str = field(default=DEFAULT_SYSTEM_PROMPT, metadata=key(
        "text", "The system prompt of every question; the paper's by default.",
        at="prompt.system"))
    models: tuple[ModelSpec, ...] = field(default=(), metadata=key(
        "tables", "The models asked: one `[[models]]` table each.", at="models"))
    judge: ModelSpec | None = field(default=None, metadata=key(
        "table", "The LLM judge of `contam judge`: the keys of a `[[models]]` table, plus `rubric`.", at="judge"))
    study: StudySettings = field(default_factory=StudySettings)
    store_flag: str | None = None  # --store as given on the command line; wins over `store`

    def command(self, verb: str) -> str:
        """The command line that repeats this run (resume hints), ``--store`` included when given."""
        line = f"contam {verb} {shlex.quote(str(self.path))}"
        return line + (f" --store {shlex.quote(self.store_flag)}" if self.store_flag else "")

    def select(self, names: list[str] | None) -> tuple[ModelSpec, ...]:
        """The models named by ``--models a,b``, in config order; all when none are named."""
        if not names:
            return self.models
        known = [m.name for m in self.models]
        missing = [n for n in names if n not in known]
        if missing:
            raise UserError(f"{self.path}: no [[models]] entry named {missing[0]!r}"
                            f"{did_you_mean(missing[0], known)}; the config has: {', '.join(known)}")
        return tuple(m for m in self.models if m.name in names)


def load_config(path: str | Path, *, store_flag: str | None = None) -> RunConfig:
    """The config at ``path``; ``store_flag`` is the command line's ``--store``, if any."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        raw = tomllib.loads(text)
    except FileNotFoundError:
        raise UserError(f"{path}: no such config file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: invalid TOML ({exc})") from None
    try:
        config = _build(path, raw)
    except KeyProblem as problem:
        line = line_of(text, problem.where, problem.key)
        raise UserError(f"{problem} (line {line})" if line else str(problem)) from None
    return replace(config, store=Path(store_flag), store_flag=store_flag) if store_flag else config


# Every table's keys, from the declarations; a table with no declared key of its own ([probes]
# ...) is a top-level key of kind table.
CONFIG_TABLES = tables_of(RunConfig, StudySettings, ItemsSource)
CONFIG_TABLES[""].update({name: Field("table") for name in CONFIG_TABLES if name
                          and name not in CONFIG_TABLES[""]})
JUDGE_FIELDS = {**MODEL_FIELDS, **CONFIG_TABLES.pop("judge")}  # [judge] adds its rubric file


def _build(path: Path, raw: dict[str, Any]) -> RunConfig:
    tables = _checked_tables(path, raw)
    models = tuple(parse_model(path, f"[[models]] #{n}", entry)
                   for n, entry in enumerate(raw.get("models", []), start=1))
    _refuse_duplicate_names(path, models)
    judge = raw.get("judge")
    items = tables["items"]
    return RunConfig(
        path=path,
        store=_beside(path, raw.get("store")),
        items=_beside(path, items.get("path")),
        items_map=dict(items.get("map", {})),
        system_prompt=tables["prompt"].get("system", DEFAULT_SYSTEM_PROMPT),
        models=models,
        judge=_parse_judge(path, judge) if judge is not None else None,
        study=_study(path, tables),
    )


def _checked_tables(path: Path, raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each declared table of the file (empty where absent), checked against its declaration;
    ``items = "FILE"`` reads as ``[items] path = "FILE"``."""
    check_table(path, "top level", raw, CONFIG_TABLES[""])
    items = raw.get("items", {})
    tables = {"items": {"path": items} if isinstance(items, str) else items}
    for name in [name for name in CONFIG_TABLES if name]:
        tables[name] = tables.get(name, raw.get(name, {}))
        if name in raw:
            check_table(path, f"[{name}]", tables[name], CONFIG_TABLES[name])
    _check_items_map(path, tables["items"].get("map", {}))
    tables["judge"] = {"rubric": raw["judge"]["rubric"]} if "rubric" in raw.get("judge", {}) else {}
    return tables


def _check_items_map(path: Path, table: dict[str, Any]) -> None:
    for contam_column, file_column in table.items():
        if not isinstance(file_column, str) or not file_column.strip():
            raise UserError(f"{path}: [items] map: {contam_column}: must be the file's column "
                            f"name, a non-empty string")


def _parse_judge(path: Path, entry: dict[str, Any]) -> ModelSpec:
    check_table(path, "[judge]", entry, JUDGE_FIELDS)
    return parse_model(path, "[judge]", {k: v for k, v in entry.items() if k != "rubric"})


def _study(path: Path, tables: dict[str, dict[str, Any]]) -> StudySettings:
    """The study's settings, each read from the place its declaration names."""
    values = {}
    for name, spec in fields_of(StudySettings).items():
        table, _, entry = spec.at.rpartition(".")
        if entry in tables[table]:
            values[name] = _typed(path, spec, tables[table][entry])
    settings = StudySettings(**values)
    _check_metric_settings(path, settings)
    _answer_regex(path, settings)
    if settings.correct is not None:
        parse_outcome(settings.correct, f"{path}: [study] correct")
    return settings


def _check_metric_settings(path: Path, study: StudySettings) -> None:
    """A named metric whose scorer takes a setting without a default needs it set (the ``regex``
    metric, ``[scoring] regex``)."""
    for name in study.metrics:
        for setting in METRICS[name].settings:
            if getattr(study, setting) is None:
                raise UserError(f"{path}: [scoring] metrics names {name!r} but [scoring] "
                                f"{setting} is not set")


def _typed(path: Path, spec: Field, value: Any) -> Any:
    """A checked TOML value as its field holds it: a tuple for a list, a path beside the file."""
    if spec.kind == "texts":
        return tuple(value)
    return _beside(path, value) if spec.file else value


def _answer_regex(path: Path, study: StudySettings) -> None:
    """``[scoring] regex``: it must compile and have a group 1 (the answer). (contam.metrics.rules
    compiles it again when scoring.)"""
    pattern = study.regex
    if pattern is None:
        return
    try:
        groups = re.compile(pattern).groups
    except re.error as exc:
        raise UserError(f"{path}: [scoring] regex: {pattern!r} does not compile ({exc})") from None
    if groups < 1:
        raise UserError(f"{path}: [scoring] regex: {pattern!r} has no group: put the answer in ( )")


def _beside(config_path: Path, named: str | None) -> Path | None:
    """A path the config names, relative to the config file (absolute ones as they are)."""
    # normpath, not resolve: "examples/../runs/x" reads as "runs/x"; symbolic links are kept.
    return Path(os.path.normpath(config_path.parent / Path(named).expanduser())) if named else None


def parse_model(path: Path, where: str, entry: dict[str, Any]) -> ModelSpec:
    check_table(path, where, entry, MODEL_FIELDS)
    _refuse_bad_batch(path, where, entry)
    _refuse_hidden_characters(path, where, entry)
    return ModelSpec(**{**entry, "name": entry.get("name") or entry["model"],
                        "base_url": _base_url(entry.get("base_url")),
                        "params": dict(entry.get("params", {})),
                        "cutoff": _iso_date(path, where, entry.get("cutoff"))})


def _iso_date(path: Path, where: str, value: str | None) -> datetime.date | None:
    """``cutoff = "2024-06-30"`` as a date; anything else is refused in one line."""
    if value is None:
        return None
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        raise UserError(f"{path}: {where}: cutoff: {value!r} is not an ISO date "
                        "(YYYY-MM-DD)") from None


def _base_url(value: str | list[str] | None) -> str | tuple[str, ...] | None:
    """A URL, or a list of URLs (replicas; the schema has checked it), which becomes a tuple."""
    return tuple(value) if isinstance(value, list) else value


def _refuse_hidden_characters(path: Path, where: str, entry: dict[str, Any]) -> None:
    """A control or other unprintable character in a ``base_url`` (its own or a replica's) is
    refused here, named escaped, rather than by the HTTP client mid-run."""
    urls = entry.get("base_url")
    for url in urls if isinstance(urls, list) else [urls] if urls else []:
        hidden = next((char for char in url if not char.isprintable()), None)
        if hidden is not None:
            name = entry.get("name") or entry.get("model")
            raise UserError(f"{path}: {where}: model '{visible(str(name), keep_newlines=False)}': "
                            f"base_url '{visible(url, keep_newlines=False)}' holds the control "
                            f"character {visible(hidden, keep_newlines=False)}; remove it")


def _refuse_bad_batch(path: Path, where: str, entry: dict[str, Any]) -> None:
    batch = entry.get("batch", False)
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
