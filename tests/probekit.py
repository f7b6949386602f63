"""Helpers for the probe tests: configs over the bundled demo items (real questions the emulator's
knowledge recognises), an in-process `contam probe`, and what an emulator was asked: requests and
the completions they asked for (``n`` / ``candidateCount``, else one)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from rich.console import Console

from contam.harness.cli import print_result
from contam.harness.config import load_config
from contam.harness.jobs.demo import demo_items_path
from contam.harness.jobs.importing import import_file
from contam.harness.jobs.probe import ProbeOptions, ProbeResult, execute_probe, make_probe
from contam.harness.store import Store
from tests.runkit import model_entry, write_config

__all__ = ["GENERATE_PATHS", "demo_config", "probe_inprocess", "ProbeRun", "generate_calls",
           "asked_samples", "model_entry", "probe_two_profiles"]

GENERATE_PATHS = ("/v1/chat/completions", "/v1/messages", "/api/generate")


def demo_config(folder: Path, entries: list[dict], *, store: str | None = None) -> Path:
    """A run config over the bundled demo items (18: 10 official, 8 fan)."""
    path = write_config(folder, entries, items=None, store=store)
    path.write_text(f'items = "{demo_items_path()}"\n' + path.read_text(encoding="utf-8"),
                    encoding="utf-8")
    return path


@dataclass
class ProbeRun:
    status: int
    out: str
    err: str
    result: ProbeResult


def probe_inprocess(config_path: Path, store_path: Path, kind: str = "cdd", *,
                    parameters: dict[str, Any] | None = None, models: list[str] | None = None,
                    limit: int | None = None, **options: Any) -> ProbeRun:
    """`contam probe` minus the argument parsing (retries without waits: see conftest); further
    keywords are ProbeOptions fields (``batch``, ``batch_options``, ``provider_factory``)."""
    config = load_config(config_path)
    out, err = io.StringIO(), io.StringIO()
    probe_options = ProbeOptions(limit=limit, no_progress=True, console=Console(file=out, width=200),
                                 handle_signals=False, parameters=parameters or {}, **options)
    built = make_probe(kind, config, probe_options.parameters)
    with Store(store_path, create=True) as store, redirect_stderr(err):
        if config.items:
            import_file(store, "items", config.items)
        result = anyio.run(execute_probe, store, config, config.select(models), built, probe_options)
    status = print_result(result, out, err)
    return ProbeRun(status, out.getvalue(), err.getvalue(), result)


def generate_calls(emulator, start: int = 0) -> list:
    """The generate requests the emulator received (from the ``start``-th request on)."""
    return [r for r in list(emulator.requests)[start:]
            if r.method == "POST" and (r.path in GENERATE_PATHS or r.path.endswith(":generateContent"))]


def asked_samples(request) -> int:
    """How many completions a generate request asked for."""
    body = request.body
    if "n" in body:
        return body["n"]
    return (body.get("generationConfig") or {}).get("candidateCount", 1)


def probe_two_profiles(folder: Path, kinds: list[tuple[str, dict[str, Any]]],
                       clean_provider: str = "openai") -> Path:
    """A store probed with each (kind, parameters) on a contaminated ("dirty", OpenAI protocol) and
    a clean ("clean", ``clean_provider``) emulated model, both knowing the demo items; the
    providers' fake keys are set for the probes only."""
    from contam.harness.emulator.knowledge import Knowledge
    from contam.harness.emulator.server import EmulatorSettings, run_emulator
    from tests.runkit import KEYS

    knowledge = {p: Knowledge.from_file(demo_items_path(), profile=p) for p in ("contaminated", "clean")}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in KEYS.items():
            patch.setenv(name, value)
        with run_emulator(EmulatorSettings(knowledge=knowledge["contaminated"])) as dirty, \
                run_emulator(EmulatorSettings(knowledge=knowledge["clean"])) as clean:
            config = demo_config(folder, [model_entry("openai", dirty, name="dirty"),
                                          model_entry(clean_provider, clean, name="clean")])
            for kind, parameters in kinds:
                assert probe_inprocess(config, folder / "s.duckdb", kind,
                                       parameters=parameters).status == 0
    return folder / "s.duckdb"
