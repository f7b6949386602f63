"""Rate limits against the emulator: a model configured at the server's limit L, and one at 2 x L.

One ``contam emulator`` child process enforces L requests per minute per (API, model) over a
sliding 60 s window, answering 429 with each API's hint (``Retry-After``; Gemini's RetryInfo).
Through the real engine (buckets, cool-down gate, stamina retries, writer, progress), every
protocol gets two models at once, each with its own window on the server:

- ``<protocol>-at-L``, configured ``rpm = L``: the target is >= 95% of L achieved and no 429;
- ``<protocol>-at-2L``, configured ``rpm = 2 L`` (a wrong config): the target is every cell
  answered, none failed, and >= 85% of L achieved by following the server's hints.

Achieved RPM = answers x 60 / the lane's wall time (first request sent to last answer). A sliding
window that starts empty lets L requests through in the first seconds, so the 2 L lane's average
is above L over a run of a few windows and tends to L (from above) as the run grows; the L lane
sends at 98% of L from the first second (its bucket's headroom). The runs take about
requests / L minutes.

    .venv/bin/python scripts/bench_rpm.py [--rpm 600] [--requests 1500] [--latency-ms 200]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import anyio
from rich.console import Console

from contam.harness.config import ModelSpec
from contam.harness.jobs.bench import EMULATOR_KEY_ENV, BenchSettings, model_rows, run_engine_phase
from contam.harness.jobs.bench_floor import emulator_process
from contam.harness.jobs.bench_output import models_table
from contam.harness.prompts import DEFAULT_SYSTEM_PROMPT
from contam.harness.store import Store

PROTOCOLS = ("openai", "gemini", "anthropic", "ollama")


def specs(emulator, rpm: float, concurrency: int) -> list[ModelSpec]:
    return [ModelSpec(name=f"{p}-at-{label}", provider=p, model=f"bench-{p}-{label.lower()}",
                      base_url=emulator.base_url(p), api_key_env=EMULATOR_KEY_ENV,
                      rpm=rpm * factor, concurrency=concurrency)
            for factor, label in ((1, "L"), (2, "2L")) for p in PROTOCOLS]


async def measure(args: argparse.Namespace, store: Store) -> list[dict]:
    settings = BenchSettings(requests=args.requests, latency_ms=args.latency_ms,
                             server_rpm=args.rpm, no_progress=args.no_progress,
                             console=Console(stderr=True), floor=False)
    with emulator_process(latency_ms=args.latency_ms, rpm=args.rpm) as emulator:
        lanes = specs(emulator, args.rpm, args.concurrency)
        phase = await run_engine_phase(store, lanes, DEFAULT_SYSTEM_PROMPT, settings)
    return model_rows(lanes, phase, args.rpm)


def verdict(rows: list[dict], rpm: float) -> list[str]:
    at_l = [r for r in rows if r["model"].endswith("-at-L")]
    at_2l = [r for r in rows if r["model"].endswith("-at-2L")]
    worst_l = min(r["server_rpm_ratio"] for r in at_l)
    worst_2l = min(r["server_rpm_ratio"] for r in at_2l)
    return [
        f"server limit L = {rpm:g} rpm per (API, model), sliding 60 s window",
        f"configured at L:  lowest achieved / L = {worst_l:.3f} (target >= 0.95), "
        f"429s = {sum(r['rate_limited'] for r in at_l)} (target 0)",
        f"configured at 2L: lowest achieved / L = {worst_2l:.3f} (target >= 0.85), "
        f"429s = {sum(r['rate_limited'] for r in at_2l)}, retries = "
        f"{sum(r['retries'] for r in at_2l)}, failed = {sum(r['failed'] for r in at_2l)} "
        f"(target 0), answered {sum(r['ok'] for r in at_2l)}/{sum(r['requests'] for r in at_2l)}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rpm", type=float, default=600.0, help="the emulator's limit L")
    parser.add_argument("--requests", type=int, default=1500, help="per model")
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault(EMULATOR_KEY_ENV, "contam-bench-emulator-key")
    with tempfile.TemporaryDirectory() as folder, Store(Path(folder) / "rpm.duckdb", create=True) as store:
        rows = anyio.run(measure, args, store)
    console = Console(width=170)
    console.print(models_table({"mode": f"emulator, L = {args.rpm:g} rpm", "models": rows}))
    for line in verdict(rows, args.rpm):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
