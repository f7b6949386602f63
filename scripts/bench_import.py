"""Time `contam import` on a synthetic store and measure each import's peak memory: N items x 4
models (default 25,000 -> 100,000 answers; 250,000 -> the 1M-row figure in the README), as CSV or
as the same rows in JSONL.

    python scripts/bench_import.py [N_ITEMS] [--jsonl]
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.filesets import write_fileset  # noqa: E402

MODELS = ["gpt", "claude", "gemini", "gemma"]


def main() -> None:
    numbers = [arg for arg in sys.argv[1:] if not arg.startswith("--")]
    n_items = int(numbers[0]) if numbers else 25_000
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = write_fileset(folder, n_items, MODELS)
        if "--jsonl" in sys.argv:
            paths = {kind: _as_jsonl(path) for kind, path in paths.items()}
        store = folder / "bench.duckdb"
        for kind in ("items", "answers", "labels"):
            started = time.perf_counter()
            peak_mb, cpu_s = _run_measured([sys.executable, "-m", "contam.harness.cli", "import", kind,
                                            str(paths[kind]), "--store", str(store)])
            seconds = time.perf_counter() - started
            print(f"{kind:8s} {_rows(paths[kind]):>9,d} rows  {seconds:6.2f} s (whole process, "
                  f"{cpu_s:6.2f} s CPU)  peak RSS {peak_mb:6.0f} MB")


def _run_measured(command: list[str]) -> tuple[float, float]:
    """Run a child to its end; its own peak resident memory in MB (Linux reports KiB) and the CPU
    seconds it used (user + system: unlike the wall time, not inflated by a busy machine)."""
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {child.returncode}")
    return usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def _rows(path: Path) -> int:
    header = 1 if path.suffix == ".csv" else 0
    return sum(1 for _ in path.open(encoding="utf-8")) - header


def _as_jsonl(path: Path) -> Path:
    """The CSV file's rows as JSON objects, one a line, beside it."""
    target = path.with_suffix(".jsonl")
    with path.open(newline="", encoding="utf-8") as rows, target.open("w", encoding="utf-8") as out:
        for row in csv.DictReader(rows):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return target


if __name__ == "__main__":
    main()
