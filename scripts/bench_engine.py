"""Wall time of a latency-bound `contam run` against the in-process emulator, next to its floor.

400 items x 4 providers (openai, gemini, anthropic and ollama protocols), 200 ms of emulated
latency, concurrency 64 per model, through the real `contam run` path into a real store in a
temporary folder. The floor is ceil(items / concurrency) x latency: no harness can finish sooner.

    .venv/bin/python scripts/bench_engine.py [--items 400] [--concurrency 64] [--latency-ms 200]
                                             [--emulator-process]

It prints the wall time of the whole `contam run` (start-up, item import check, store writes
included), the answering span (first request sent to last answer created, from the store), the
process's CPU time and its peak RSS (the work is read from the store a page at a time and never
held whole: ``--items 25000`` is 100,000 cells). The in-process emulator shares the harness's
interpreter, and so its GIL: ``--emulator-process`` serves it from a `contam emulator` subprocess
instead, to show the harness's own cost.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import resource
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

from batchkit import write_items  # scripts/batchkit.py

from contam.harness.cli import main as contam
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.jobs.bench_floor import emulator_process
from contam.harness.store import Store

PROVIDERS = ("openai", "gemini", "anthropic", "ollama")
KEYS = {"OPENAI_API_KEY": "sk-bench", "GEMINI_API_KEY": "gm-bench", "ANTHROPIC_API_KEY": "an-bench"}


def write_config(path: Path, base_urls: dict[str, str], concurrency: int) -> None:
    entries = [f'[[models]]\nname = "{p}-bench"\nprovider = "{p}"\nmodel = "bench-{p}"\n'
               f'base_url = "{base_urls[p]}"\nconcurrency = {concurrency}\n' for p in PROVIDERS]
    path.write_text('items = "items.csv"\n\n' + "\n".join(entries), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--emulator-process", action="store_true",
                        help="serve the emulator from a subprocess, not a thread of this process")
    args = parser.parse_args()
    os.environ.update(KEYS)
    serve = _emulator_process if args.emulator_process else _emulator_thread
    with tempfile.TemporaryDirectory() as folder, serve(args.latency_ms) as base_url:
        root = Path(folder)
        write_items(root / "items.csv", args.items)
        write_config(root / "run.toml", {p: base_url(p) for p in PROVIDERS}, args.concurrency)
        store = root / "bench.duckdb"
        with redirect_stdout(io.StringIO()):
            contam(["import", "items", str(root / "items.csv"), "--store", str(store)])
        wall, cpu, status, output = _timed_run(root / "run.toml", store)
        answers, span = _store_figures(store)
    floor = math.ceil(args.items / args.concurrency) * args.latency_ms / 1000
    cells = args.items * len(PROVIDERS)
    where = "a subprocess" if args.emulator_process else "a thread of this process"
    print(output, end="")
    print(f"contam run exit status {status}; {answers}/{cells} answers in the store")
    print(f"cells {cells} ({args.items} items x {len(PROVIDERS)} providers), concurrency "
          f"{args.concurrency} per model, latency {args.latency_ms:g} ms, emulator in {where}")
    print(f"floor ceil({args.items}/{args.concurrency}) x {args.latency_ms / 1000:g} s = {floor:.3f} s")
    print(f"contam run wall  {wall:.3f} s   wall/floor {wall / floor:.3f}")
    print(f"answering span   {span:.3f} s   span/floor {span / floor:.3f}")
    print(f"process CPU {cpu:.3f} s ({cpu / cells * 1e6:.0f} us per request"
          f"{', emulator included' if not args.emulator_process else ''})")
    print(f"peak RSS {_peak_rss_mb():.1f} MB (the whole process: import, run and checks)")
    return 0 if status == 0 and answers == cells else 1


@contextlib.contextmanager
def _emulator_thread(latency_ms: float):
    with run_emulator(EmulatorSettings(latency_ms=latency_ms, record=False)) as emulator:
        yield emulator.base_url


@contextlib.contextmanager
def _emulator_process(latency_ms: float):
    with emulator_process(latency_ms=latency_ms) as emulator:
        yield emulator.base_url


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _store_figures(store: Path) -> tuple[int, float]:
    """Answers in the store, and seconds from the first request sent to the last answer made."""
    with Store(store, read_only=True) as opened:
        answers = opened.count("answers")
        [(span,)] = opened.query(
            "SELECT epoch((SELECT max(created_at) FROM answers)) - epoch(min(started_at)) FROM attempts")
    return answers, span


def _timed_run(config: Path, store: Path) -> tuple[float, float, int, str]:
    """Wall and CPU seconds of one `contam run` (items already imported), its status and output."""
    captured = io.StringIO()
    cpu_before, wall_before = _cpu(), time.perf_counter()
    with redirect_stdout(captured):
        status = contam(["run", str(config), "--store", str(store), "--no-progress"])
    return time.perf_counter() - wall_before, _cpu() - cpu_before, status, captured.getvalue()


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    sys.exit(main())
