"""Time `contam import` on a synthetic store: N items x 4 models (default 25,000 -> 100,000 answers).

    python scripts/bench_import.py [N_ITEMS]
"""

from __future__ import annotations

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
            subprocess.run([sys.executable, "-m", "harness.cli", "import", kind, str(paths[kind]),
                            "--store", str(store)], check=True, stdout=subprocess.DEVNULL)
            print(f"{kind:8s} {_rows(paths[kind]):>8,d} rows  {time.perf_counter() - started:6.2f} s "
                  "(whole process)")


def _rows(path: Path) -> int:
    return sum(1 for _ in path.open(encoding="utf-8")) - 1


if __name__ == "__main__":
    main()
