"""Helpers for the engine/run tests: item files, run configs pointing at an emulator, an in-process
`contam run` (retries without waits: see conftest), and a provider wrapper that timestamps what a lane sends."""

from __future__ import annotations

import csv
import io
import re
import time
from contextlib import redirect_stderr
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console

from contam.harness.cli import print_result
from contam.harness.config import load_config
from contam.harness.jobs.importing import import_file
from contam.harness.jobs.run import RunOptions, execute_run
from contam.harness.store import Store
from contam.providers.base import Provider, RateLimited, Reply, Request
from contam.providers.registry import create_provider

__all__ = ["KEYS", "write_items", "model_entry", "write_config", "run_inprocess",
           "RunResult", "Recorder", "store_text", "question_number"]

# Distinctive fake keys: a test greps the store and every output for them.
KEYS = {"OPENAI_API_KEY": "sk-test-OPENAI-d0n0tl3ak", "GEMINI_API_KEY": "AIza-test-GEMINI-d0n0tl3ak",
        "ANTHROPIC_API_KEY": "sk-ant-test-ANTHROPIC-d0n0tl3ak"}


def write_items(path: Path, n: int) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "title", "subset", "question", "reference"])
        for i in range(n):
            writer.writerow([f"q{i:04d}", "Pokémon Red" if i % 2 else "Pokémon Brown",
                             "official" if i % 2 else "fan", f"Question {i}?", f"Reference {i}"])
    return path


def question_number(text: str) -> int:
    """The item number of a request's user text (``Question 17?`` -> 17)."""
    return int(re.search(r"Question (\d+)\?", text).group(1))


def model_entry(provider: str, emulator: Any, name: str | None = None, **overrides: Any) -> dict:
    entry = {"name": name or f"{provider}-m", "provider": provider, "model": f"emu-{provider}",
             "base_url": emulator.base_url(provider), "concurrency": 4, "max_attempts": 4,
             "timeout_s": 5}
    return {**entry, **overrides}


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_config(folder: Path, entries: list[dict], *, items: int | None = 12,
                 store: str | None = None) -> Path:
    lines = []
    if store:
        lines.append(f"store = {_toml_value(store)}")
    if items is not None:
        write_items(folder / "items.csv", items)
        lines.append('items = "items.csv"')
    for entry in entries:
        lines.append("\n[[models]]")
        lines += [f"{key} = {_toml_value(value)}" for key, value in entry.items()]
    path = folder / "run.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@dataclass
class RunResult:
    status: int
    out: str
    err: str


def run_inprocess(config_path: Path, store_path: Path, *, models: list[str] | None = None,
                  limit: int | None = None, provider_factory: Any = None,
                  **options_: Any) -> RunResult:
    """`contam run` minus the argument parsing, with captured output; further keywords are
    RunOptions fields (``batch``, ``batch_options``)."""
    config = load_config(config_path)
    out, err = io.StringIO(), io.StringIO()
    options = RunOptions(limit=limit, no_progress=True, console=Console(file=out, width=200),
                         provider_factory=provider_factory, handle_signals=False, **options_)
    with Store(store_path, create=True) as store, redirect_stderr(err):
        if config.items:
            import_file(store, "items", config.items)
        result = anyio.run(execute_run, store, config, config.select(models), options)
    status = print_result(result, out, err)
    return RunResult(status, out.getvalue(), err.getvalue())


@dataclass
class Recorder:
    """Wraps the real providers: when each lane sent what, and when a 429 came back."""

    sent: list[tuple[str, float, str]] = field(default_factory=list)  # (lane, time, user text)
    limited: list[tuple[str, float, float | None]] = field(default_factory=list)  # (lane, time, hint)

    def factory(self, spec: Any, client: Any) -> "_Recording":
        return _Recording(create_provider(spec, client), self)

    def sends(self, lane: str) -> list[float]:
        return [t for name, t, _ in self.sent if name == lane]


class _Recording(Provider):
    def __init__(self, inner: Any, recorder: Recorder) -> None:
        self.inner, self.recorder, self.spec = inner, recorder, inner.spec

    def served_model_id(self) -> str:
        return self.inner.served_model_id()

    async def preflight(self) -> str | None:
        return await self.inner.preflight()

    async def generate(self, request: Request) -> Reply:
        self.recorder.sent.append((self.spec.name, time.monotonic(), request.user))
        try:
            return await self.inner.generate(request)
        except RateLimited as exc:
            self.recorder.limited.append((self.spec.name, time.monotonic(), exc.retry_after_s))
            raise


def store_text(store_path: Path) -> str:
    """Every value of every table of the store, as one string (to look for leaked keys)."""
    with Store(store_path, read_only=True) as store:
        tables = [row[0] for row in store.query(
            "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'")]
        return "\n".join(str(row) for table in tables for row in store.query(f"SELECT * FROM {table}"))
