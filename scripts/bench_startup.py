"""Start-up time of `contam`: `contam --version` and a simple `contam sql` on a 1,600-cell store
(400 items x 4 models, answers and labels), against a bare `python -c "import duckdb"` — the floor
a command that opens a store cannot go below. Prints the median of several runs of each, and its
ratio to the floor, twice: with cached bytecode, as an installed contam runs (pip compiles every
module when it installs it; here the cache goes to a temporary PYTHONPYCACHEPREFIX), and with
every module compiled from source each time, as under PYTHONDONTWRITEBYTECODE=1 in an environment
that has no cache.

    python scripts/bench_startup.py [RUNS]     (default 7)
"""

from __future__ import annotations

import os
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
CONTAM = [sys.executable, "-m", "contam.harness.cli"]


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
        for title, env in (("cached bytecode", _cached_bytecode(Path(tmp) / "pycache")),
                           ("compiled from source", _no_bytecode())):
            medians = {name: _median_seconds(argv, runs, env) for name, argv in commands.items()}
            _print(f"{title}: median of {runs} runs each (whole process, wall clock)", medians)


def _cached_bytecode(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(folder)}


def _no_bytecode() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    return {**env, "PYTHONDONTWRITEBYTECODE": "1"}


def _print(title: str, medians: dict[str, float]) -> None:
    floor = medians['python -c "import duckdb"']
    print(title)
    for name, seconds in medians.items():
        print(f"  {name:42s} {seconds:6.3f} s  {seconds / floor:5.2f} x import duckdb")


def _paper_sized_store(folder: Path) -> Path:
    """400 items x 4 models = 1,600 cells, imported the way a user would."""
    paths = write_fileset(folder, N_ITEMS, MODELS)
    store = folder / "startup.duckdb"
    for kind in ("items", "answers", "labels"):
        _run([*CONTAM, "import", kind, str(paths[kind]), "--store", str(store)])
    cells = subprocess.run([*CONTAM, "sql", "--store", str(store), "--format", "csv",
                            "select count(*) from cells"], capture_output=True, text=True, check=True,
                           cwd=ROOT)
    if cells.stdout.split()[-1] != str(N_ITEMS * len(MODELS)):
        raise SystemExit(f"expected {N_ITEMS * len(MODELS)} cells, the store has {cells.stdout!r}")
    return store


def _median_seconds(command: list[str], runs: int, env: dict[str, str]) -> float:
    _run(command, env)  # unmeasured: files in the page cache (and bytecode cached, where it is)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        _run(command, env)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _run(command: list[str], env: dict[str, str] | None = None) -> None:
    result = subprocess.run(command, capture_output=True, cwd=ROOT, env=env)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {result.returncode}: "
                         f"{result.stderr.decode(errors='replace').strip()}")


if __name__ == "__main__":
    main()
