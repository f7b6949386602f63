"""Time `contam import` on a synthetic store and measure each import's peak memory: N items x 4
models (default 25,000 -> 100,000 answers; 250,000 -> the 1M-row figure in the README).

    python scripts/bench_import.py [N_ITEMS]
"""

from __future__ import annotations

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
    n_items = int(sys.argv[1]) if len(sys.argv) > 1 else 25_000
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = write_fileset(folder, n_items, MODELS)
        store = folder / "bench.duckdb"
        for kind in ("items", "answers", "labels"):
            started = time.perf_counter()
            peak_mb = _run_measured([sys.executable, "-m", "harness.cli", "import", kind,
                                     str(paths[kind]), "--store", str(store)])
            seconds = time.perf_counter() - started
            print(f"{kind:8s} {_rows(paths[kind]):>9,d} rows  {seconds:6.2f} s (whole process)  "
                  f"peak RSS {peak_mb:6.0f} MB")


def _run_measured(command: list[str]) -> float:
    """Run a child to its end; its own peak resident memory in MB (Linux reports KiB)."""
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {child.returncode}")
    return usage.ru_maxrss / 1024


def _rows(path: Path) -> int:
    return sum(1 for _ in path.open(encoding="utf-8")) - 1


if __name__ == "__main__":
    main()
