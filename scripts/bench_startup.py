"""Start-up time of `contam`: `contam --version` and a simple `contam sql` on a 1,600-cell store
(400 items x 4 models, answers and labels), against a bare `python -c "import duckdb"` — the floor
a command that opens a store cannot go below. Prints the median of several runs of each, and its
ratio to the floor.

    python scripts/bench_startup.py [RUNS]     (default 7)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.filesets import write_fileset  # noqa: E402

MODELS = ["gpt", "claude", "gemini", "gemma"]
N_ITEMS = 400
CONTAM = [sys.executable, "-m", "harness.cli"]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    with tempfile.TemporaryDirectory() as tmp:
        store = _paper_sized_store(Path(tmp))
        commands = {
            'python -c "import duckdb"': [sys.executable, "-c", "import duckdb"],
            "contam --version": [*CONTAM, "--version"],
            'contam sql "select count(*) from cells"':
                [*CONTAM, "sql", "--store", str(store), "select count(*) from cells"],
        }
        medians = {name: _median_seconds(command, runs) for name, command in commands.items()}
    floor = medians['python -c "import duckdb"']
    print(f"median of {runs} runs each (whole process, wall clock):")
    for name, seconds in medians.items():
        print(f"  {name:42s} {seconds:6.3f} s  {seconds / floor:5.1f} x import duckdb")


def _paper_sized_store(folder: Path) -> Path:
    """400 items x 4 models = 1,600 cells, imported the way a user would."""
    paths = write_fileset(folder, N_ITEMS, MODELS)
    store = folder / "startup.duckdb"
    for kind in ("items", "answers", "labels"):
        _run([*CONTAM, "import", kind, str(paths[kind]), "--store", str(store)])
    cells = subprocess.run([*CONTAM, "sql", "--store", str(store), "--format", "csv",
                            "select count(*) from cells"], capture_output=True, text=True, check=True)
    if cells.stdout.split()[-1] != str(N_ITEMS * len(MODELS)):
        raise SystemExit(f"expected {N_ITEMS * len(MODELS)} cells, the store has {cells.stdout!r}")
    return store


def _median_seconds(command: list[str], runs: int) -> float:
    _run(command)  # one unmeasured run: the files are in the page cache for every measured one
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        _run(command)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _run(command: list[str]) -> None:
    result = subprocess.run(command, capture_output=True, cwd=ROOT)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {result.returncode}: "
                         f"{result.stderr.decode(errors='replace').strip()}")


if __name__ == "__main__":
    main()
