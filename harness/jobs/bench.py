"""``contam bench``: what the real engine achieves against real providers or against the emulator.

``contam bench CONFIG.toml --requests N`` sends N probe requests to every configured model through
the engine ``contam run`` uses (buckets, cool-downs, retries, the batched DuckDB writer, the
progress display) and reports per model: requests, answered, 429s, failed, wall seconds,
requests per second, latency percentiles, retries, and the achieved RPM against the configured
limit. A probe is an ordinary question request (:func:`contam.harness.prompts.question_request`, R1/R2
by construction) with one fixed question. Its rows go to a bench store of their own (a temporary
file unless ``--store``), never into a study's: a ``--store`` that holds items or non-bench runs
is refused.

``contam bench --emulator`` does the same against a ``contam emulator`` child process, with one
model per protocol (openai, gemini, anthropic, ollama), and then the floor
(:mod:`contam.harness.jobs.bench_floor`): a bare httpx loop sending the same requests at the same concurrency
to the same server. It reports the CPU seconds per request of both (process CPU, every thread:
the writer's DuckDB commits and the display included) and their ratio, and the wall time of both
against the latency floor ``ceil(requests / concurrency) x latency``.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import os
import platform
import resource
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from rich.console import Console

from contam.harness.config import ModelSpec, load_config
from contam.harness.declare import flag_of
from contam.harness.engine.counters import LaneStats
from contam.harness.engine.lanes import Lane, Task
from contam.harness.engine.writer import Rows
from contam.harness.errors import UserError
from contam.harness.jobs.bench_floor import (
    BareResult, BareTarget, bare_loop, emulator_process, process_cpu_s,
)
from contam.harness.jobs.lane_job import JobOptions, JobResult, new_run_id, run_lanes, run_row
from contam.harness.jobs.options.bench import BenchOptions
from contam.harness.jobs.run import answer_rows
from contam.harness.prompts import DEFAULT_SYSTEM_PROMPT, prompt_sha256, question_request
from contam.harness.store import Store
from contam.providers.base import Reply, Request
from contam.providers.registry import PROVIDER_CLASSES, create_provider
from contam.providers.traits import HTTP_PROVIDERS

__all__ = ["bench", "BenchOptions", "BenchResult", "BenchSettings", "EnginePhase", "run_engine_phase", "bench_emulator",
           "bench_config", "probe_request", "emulator_specs", "PROBE_TITLE", "PROBE_QUESTION",
           "EMULATOR_PROTOCOLS", "EMULATOR_KEY_ENV", "DEFAULT_REQUESTS", "DEFAULT_CONCURRENCY",
           "DEFAULT_LATENCY_MS", "model_rows"]

PROBE_TITLE = "Pokémon Red"
PROBE_QUESTION = "Which three Pokémon does Professor Oak offer the player at the start?"
EMULATOR_PROTOCOLS = HTTP_PROVIDERS  # every wire protocol (providers/traits.py)
# The emulator checks no keys, but the providers insist on one from the environment.
EMULATOR_KEY_ENV = "CONTAM_BENCH_EMULATOR_KEY"
# Defaults of `contam bench --emulator`: 4 x 256 requests, 32 in flight per protocol, 1 s each. The
# latency floor is 8 s, and the work (128 requests a second) leaves 2 shared cores mostly idle, so
# the wall time is about the network: both the harness and the bare loop come within 5% of the
# floor. At 500 ms the client's and the emulator's processing of each wave of 128 replies was
# already ~8% of the latency; at 200 ms x 64 in flight neither could keep up on 2 cores.
DEFAULT_REQUESTS = 256
DEFAULT_CONCURRENCY = 32
DEFAULT_LATENCY_MS = 1000.0


@dataclass(frozen=True, kw_only=True)
class BenchSettings:
    requests: int
    concurrency: int | None = None  # None: each model's configured concurrency
    latency_ms: float = DEFAULT_LATENCY_MS  # the emulator's
    server_rpm: float | None = None  # the emulator's enforced limit
    model_rpm: float | None = None  # the limit the emulator's models are configured with
    floor: bool = True
    no_progress: bool = False
    console: Console = field(default_factory=Console)
    handle_signals: bool = True


@dataclass(frozen=True)
class BenchResult:
    report: dict[str, Any]

    @property
    def exit_status(self) -> int:
        return 1 if any(model["stopped"] for model in self.report["models"]) else 0


def bench(options: BenchOptions) -> BenchResult:
    """``contam bench``: the engine's probes (and the bare floor) against a config or the emulator."""
    settings = _settings(options)
    config = None if options.emulator else load_config(options.config)
    specs = config.select(options.models) if config else ()
    if config and not specs:
        raise UserError(f"{config.path}: no [[models]] to benchmark")
    with ExitStack() as stack:
        with Store(_store_path(options.store, stack), create=True) as store:
            _refuse_study_store(store)
            if config is None:
                report = anyio.run(bench_emulator, store, settings)
            else:
                report = anyio.run(bench_config, store, specs, config.system_prompt, settings)
    report["store"] = options.store
    return BenchResult(report)


def _settings(options: BenchOptions) -> BenchSettings:
    options.check()
    concurrency = options.concurrency or (DEFAULT_CONCURRENCY if options.emulator else None)
    return BenchSettings(
        requests=options.requests or DEFAULT_REQUESTS, concurrency=concurrency,
        latency_ms=DEFAULT_LATENCY_MS if options.latency_ms is None else options.latency_ms,
        server_rpm=options.rpm, model_rpm=options.model_rpm or options.rpm,
        floor=not options.no_floor and not options.rpm, no_progress=options.no_progress,
        console=Console(stderr=options.format == "json"))


def _store_path(store: str | None, stack: ExitStack) -> Path:
    if store:
        return Path(store)
    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="contam-bench-"))
    return Path(folder) / "bench.duckdb"


def _refuse_study_store(store: Store) -> None:
    """Probe answers must never mix with a study's: a bench store holds bench runs only."""
    [(items,)] = store.query("SELECT count(*) FROM items")
    [(other_runs,)] = store.query("SELECT count(*) FROM runs WHERE kind IS DISTINCT FROM 'bench'")
    if items or other_runs:
        raise UserError(f"{store.path}: this store holds a study ({items} items, {other_runs} "
                        f"runs); give `contam bench {flag_of(BenchOptions, 'store')}` a file of its "
                        "own")


# -- the engine phase ---------------------------------------------------------------------------

def probe_request(system: str = DEFAULT_SYSTEM_PROMPT) -> Request:
    """The one question every probe asks: an ordinary, stateless question request."""
    return question_request(system, PROBE_TITLE, PROBE_QUESTION)


def _probe_tasks(spec: ModelSpec, request: Request, count: int) -> Iterator[Task]:
    for number in range(count):
        yield Task(item_id=f"probe-{number:06d}", model=spec.name, request=request)


@dataclass(kw_only=True)
class EnginePhase:
    """What the engine did: its lanes' counters, each answer's latency, and its cost."""

    stats: list[LaneStats]
    latencies: dict[str, list[float]]
    wall_s: float
    cpu_s: float
    peak_rss_mb: float


async def run_engine_phase(store: Store, specs: Sequence[ModelSpec], system: str,
                           settings: BenchSettings) -> EnginePhase:
    """``settings.requests`` probes per model through the real engine into ``store``."""
    run_id, request = new_run_id(), probe_request(system)
    latencies: dict[str, list[float]] = {spec.name: [] for spec in specs}
    lanes = [Lane(spec=spec, total=settings.requests,
                  tasks=_probe_tasks(spec, request, settings.requests)) for spec in specs]
    options = JobOptions(no_progress=settings.no_progress, console=settings.console,
                         handle_signals=settings.handle_signals)
    cpu, wall = time.process_time(), time.perf_counter()
    result = await run_lanes(store, lanes, result=JobResult(command="bench", run_id=run_id),
                             accept=_timed(answer_rows(run_id, specs), latencies),
                             started=_bench_run_row(run_id, specs, system, settings), options=options)
    return EnginePhase(stats=result.stats, latencies=latencies,
                       wall_s=time.perf_counter() - wall, cpu_s=time.process_time() - cpu,
                       peak_rss_mb=_peak_rss_mb())


def _timed(accept, latencies: dict[str, list[float]]):
    def accept_and_time(task: Task, reply: Reply, latency_s: float) -> Rows:
        rows = accept(task, reply, latency_s)
        latencies[task.model].append(latency_s)
        return rows

    return accept_and_time


def _bench_run_row(run_id: str, specs: Sequence[ModelSpec], system: str,
                   settings: BenchSettings) -> dict[str, Any]:
    config = {"bench": {"requests": settings.requests, "concurrency": settings.concurrency,
                        "probe_title": PROBE_TITLE, "probe_question": PROBE_QUESTION},
              "system_prompt": system, "models": [spec.public_dict() for spec in specs]}
    return run_row(run_id, "bench", config, prompt_sha256(system))


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)  # bytes on macOS, KiB else


# -- contam bench CONFIG.toml -------------------------------------------------------------------

async def bench_config(store: Store, specs: Sequence[ModelSpec], system: str,
                       settings: BenchSettings) -> dict[str, Any]:
    if settings.concurrency:
        specs = [dataclasses.replace(spec, concurrency=settings.concurrency) for spec in specs]
    machine = _machine()
    phase = await run_engine_phase(store, specs, system, settings)
    return {"mode": "config", "machine": _machine_after(machine),
            "settings": {"requests": settings.requests, "concurrency": settings.concurrency},
            "models": model_rows(specs, phase, None),
            "harness": _harness_row(phase, settings.requests * len(specs), None),
            "floor": None, "emulator_cpu_s": None}


# -- contam bench --emulator --------------------------------------------------------------------

def emulator_specs(emulator: Any, settings: BenchSettings) -> list[ModelSpec]:
    """One model per protocol, pointed at ``emulator``."""
    return [ModelSpec(name=f"{p}-bench", provider=p, model=f"bench-{p}",
                      base_url=emulator.base_url(p), api_key_env=EMULATOR_KEY_ENV,
                      concurrency=settings.concurrency or DEFAULT_CONCURRENCY,
                      rpm=settings.model_rpm, timeout_s=max(60.0, 10 * settings.latency_ms / 1000))
            for p in EMULATOR_PROTOCOLS]


async def bench_emulator(store: Store, settings: BenchSettings) -> dict[str, Any]:
    os.environ.setdefault(EMULATOR_KEY_ENV, "contam-bench-emulator-key")
    for protocol in EMULATOR_PROTOCOLS:  # imports are start-up, not per-request, cost
        importlib.import_module(PROVIDER_CLASSES[protocol][0])
    machine = _machine()
    with emulator_process(latency_ms=settings.latency_ms, rpm=settings.server_rpm) as emulator:
        specs = emulator_specs(emulator, settings)
        phase, bare, server_cpu = await _emulator_phases(store, specs, emulator.pid, settings)
    concurrency = specs[0].concurrency
    floor_s = math.ceil(settings.requests / concurrency) * settings.latency_ms / 1000
    cells = settings.requests * len(specs)
    return {"mode": "emulator", "machine": _machine_after(machine),
            "settings": {"requests": settings.requests, "concurrency": concurrency,
                         "latency_ms": settings.latency_ms, "server_rpm": settings.server_rpm,
                         "model_rpm": settings.model_rpm},
            "models": model_rows(specs, phase, settings.server_rpm),
            "harness": _harness_row(phase, cells, floor_s),
            "floor": _floor_row(bare, phase, cells, floor_s) if bare else None,
            "emulator_cpu_s": server_cpu}


async def _emulator_phases(store: Store, specs: Sequence[ModelSpec], server_pid: int,
                           settings: BenchSettings) -> tuple[EnginePhase, BareResult | None, Any]:
    """The engine, then the bare loop (after an unmeasured warm-up of the server and of both
    code paths), and the emulator process's CPU seconds during each."""
    targets = _bare_targets(specs, probe_request())
    spec = specs[0]
    if settings.floor:
        await bare_loop(targets, requests=spec.concurrency, concurrency=spec.concurrency,
                        timeout_s=spec.timeout_s)
    before = process_cpu_s(server_pid)
    phase = await run_engine_phase(store, specs, DEFAULT_SYSTEM_PROMPT, settings)
    between = process_cpu_s(server_pid)
    bare = None
    if settings.floor:
        bare = await bare_loop(targets, requests=settings.requests, concurrency=spec.concurrency,
                               timeout_s=spec.timeout_s)
    server_cpu = {"harness_phase": _difference(between, before),
                  "bare_phase": _difference(process_cpu_s(server_pid), between) if bare else None}
    return phase, bare, server_cpu


def _bare_targets(specs: Sequence[ModelSpec], request: Request) -> list[BareTarget]:
    """Each protocol's request exactly as its provider builds it."""
    targets = []
    for spec in specs:
        provider = create_provider(spec, None)
        targets.append(BareTarget(name=spec.name, url=provider.endpoint(),
                                  headers=provider.headers(), payload=provider.payload(request)))
    return targets


def _difference(after: float | None, before: float | None) -> float | None:
    return None if after is None or before is None else round(after - before, 3)


# -- figures ------------------------------------------------------------------------------------

def model_rows(specs: Sequence[ModelSpec], phase: EnginePhase,
               server_rpm: float | None) -> list[dict[str, Any]]:
    """The report's per-model figures (the ``models`` list of ``--format json``)."""
    return [_model_row(spec, stats, phase.latencies[spec.name], server_rpm)
            for spec, stats in zip(specs, phase.stats)]


def _model_row(spec: ModelSpec, stats: LaneStats, latencies: list[float],
               server_rpm: float | None) -> dict[str, Any]:
    wall = (stats.finished or time.monotonic()) - stats.started
    p50, p95, p99 = (np.percentile(latencies, [50, 95, 99]).tolist() if latencies
                     else (None, None, None))
    achieved = stats.done * 60 / wall if wall > 0 else 0.0
    return {"model": spec.name, "provider": spec.provider, "requests": stats.total,
            "ok": stats.done, "rate_limited": stats.rate_limited,
            "failed": stats.total - stats.done, "retries": stats.retries,
            "wall_s": _round(wall), "requests_per_s": _round(stats.done / wall if wall > 0 else 0.0),
            "latency_p50_s": _round(p50), "latency_p95_s": _round(p95), "latency_p99_s": _round(p99),
            "achieved_rpm": _round(achieved, 1), "rpm_limit": spec.rpm,
            "rpm_ratio": _round(achieved / spec.rpm) if spec.rpm else None,
            "server_rpm_ratio": _round(achieved / server_rpm) if server_rpm else None,
            "concurrency": spec.concurrency, "stopped": stats.stopped,
            "stop_message": stats.stop_message}


def _harness_row(phase: EnginePhase, cells: int, floor_s: float | None) -> dict[str, Any]:
    return {"requests": cells, "ok": sum(s.done for s in phase.stats),
            "wall_s": _round(phase.wall_s), "cpu_s": _round(phase.cpu_s),
            "cpu_per_request_ms": _round(phase.cpu_s * 1000 / cells, 4),
            "peak_rss_mb": _round(phase.peak_rss_mb, 1), "latency_floor_s": floor_s,
            "wall_over_floor": _round(phase.wall_s / floor_s) if floor_s else None}


def _floor_row(bare: BareResult, phase: EnginePhase, cells: int, floor_s: float) -> dict[str, Any]:
    return {"client": "an httpx.AsyncClient per worker (one keep-alive connection each), "
                      "asyncio tasks, orjson, the engine's GC settings; no limiter, retries, "
                      "store or display",
            "requests": bare.requests, "ok": bare.ok, "wall_s": _round(bare.wall_s),
            "cpu_s": _round(bare.cpu_s), "cpu_per_request_ms": _round(bare.cpu_s * 1000 / cells, 4),
            "wall_over_floor": _round(bare.wall_s / floor_s) if floor_s else None,
            "cpu_ratio": _round(phase.cpu_s / bare.cpu_s) if bare.cpu_s > 0 else None,
            "wall_ratio": _round(phase.wall_s / bare.wall_s) if bare.wall_s > 0 else None}


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "cpu_model": _cpu_model(), "python": platform.python_version(),
            "platform": platform.platform(terse=True), "load_avg_before": _load()}


def _machine_after(machine: dict[str, Any]) -> dict[str, Any]:
    return {**machine, "load_avg_after": _load()}


def _load() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
