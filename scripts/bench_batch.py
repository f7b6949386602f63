"""A 10,000-cell `contam run --batch` against the in-process emulator, next to the synchronous run.

    .venv/bin/python scripts/bench_batch.py [--cells 10000] [--processing-s 2]

The cells are split evenly over the three batch providers (openai, anthropic, gemini). Both runs go
through the real `contam run` command into real stores in a temporary folder; the script prints
each run's wall time and HTTP requests, the batch jobs, and how many answers differ (0 expected:
the batch path sends the same bodies and imports through the same normalisation).
"""

from __future__ import annotations

import argparse
import io
import math
import os
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

from contam.harness.cli import main as contam
from contam.harness.store import Store
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from batchkit import KEYS, PROVIDERS, answers, write_setup  # scripts/batchkit.py


def timed_run(args: list[str], emu) -> tuple[float, int, int]:
    """(wall seconds, exit status, requests the emulator received) of one `contam run`."""
    before, started = len(emu.requests), time.perf_counter()
    with redirect_stdout(io.StringIO()):
        status = contam(args)
    return time.perf_counter() - started, status, len(emu.requests) - before


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=10_000)
    parser.add_argument("--processing-s", type=float, default=2.0, help="emulated job time")
    args = parser.parse_args()
    os.environ.update(KEYS)
    items = math.ceil(args.cells / len(PROVIDERS))
    with tempfile.TemporaryDirectory() as tmp, \
            run_emulator(EmulatorSettings(batch_processing_s=args.processing_s)) as emu:
        folder = Path(tmp)
        config = str(write_setup(folder, items, emu.url))
        sync = timed_run(["run", config, "--store", str(folder / "sync.duckdb"), "--no-progress"], emu)
        batch = timed_run(["run", config, "--batch", "--batch-poll-max", "0.5", "--no-progress",
                           "--store", str(folder / "batch.duckdb")], emu)
        sync_answers, batch_answers = answers(folder / "sync.duckdb"), answers(folder / "batch.duckdb")
        with Store(folder / "batch.duckdb", read_only=True) as store:
            jobs = store.query("SELECT provider, job_id, cells, succeeded FROM latest_batches ORDER BY 1")
    print(f"cells: {items} items x {len(PROVIDERS)} providers = {items * len(PROVIDERS)}")
    print(f"synchronous: {sync[0]:.1f} s, exit {sync[1]}, {sync[2]} HTTP requests, "
          f"{len(sync_answers)} answers")
    print(f"batch:       {batch[0]:.1f} s, exit {batch[1]}, {batch[2]} HTTP requests, "
          f"{len(batch_answers)} answers (emulated job time {args.processing_s:g} s)")
    for provider, job_id, cells, succeeded in jobs:
        print(f"  {provider:<9} job {job_id}: {succeeded}/{cells} succeeded")
    differ = sum(1 for cell, text in batch_answers.items() if sync_answers.get(cell) != text)
    print(f"answers differing between the two paths: {differ}; cells only in one: "
          f"{len(set(sync_answers) ^ set(batch_answers))}")
    return 0 if differ == 0 and sync_answers.keys() == batch_answers.keys() else 1


if __name__ == "__main__":
    sys.exit(main())
