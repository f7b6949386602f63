"""Peak memory of `contam run`, `contam score --metric bleu2` and `contam report` as the run grows.

For each size: one model (openai protocol) asks every item of a fresh store against a `contam
emulator` subprocess with no latency, then scores BLEU-2 and writes the report; each command is a
child process of its own, and its peak RSS is read from the kernel (``os.wait4``) when it ends.
Memory that does not grow with the run stays flat from the smallest size to the largest.

    .venv/bin/python scripts/bench_memory.py [--cells 200000 1000000] [--concurrency 64]
        [--answers-by-sql] [--against OTHER_CHECKOUT]

It prints one line per size: cells, and per command its wall seconds and peak RSS in MB.
``--answers-by-sql`` writes the answers with one INSERT instead of `contam run` (minutes instead of
an hour at a million cells on two shared cores; `run` is then not measured). ``--against DIR``
measures the same commands of another checkout (``git worktree add DIR main``) on a copy of the
same store, one more line per size: before and after in one run.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from contam.harness.jobs.bench_floor import emulator_process

COMMANDS = {"run": ["run", "{config}", "--no-progress"],
            "score": ["score", "--metric", "bleu2", "--no-progress"],
            "report": ["report", "--out", "{folder}/report"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--answers-by-sql", action="store_true")
    parser.add_argument("--against", type=Path, help="another checkout, measured on the same stores")
    args = parser.parse_args()
    os.environ["OPENAI_API_KEY"] = "sk-bench"
    with emulator_process(latency_ms=0) as emulator:
        for cells in args.cells:
            for label, figures in _measure(cells, emulator.base_url("openai"), args):
                print(_line(cells, figures, label), flush=True)
    return 0


def _measure(cells: int, base_url: str, args) -> list[tuple[str, dict[str, tuple[float, float]]]]:
    """(checkout, {command: (wall s, peak RSS MB)}) over a fresh store of ``cells`` items: this
    checkout's, then ``--against``'s on a copy of the store as it was before the first command."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        _write_items(folder / "items.csv", cells)
        config = folder / "run.toml"
        config.write_text(f'items = "items.csv"\n\n[[models]]\nname = "m"\nprovider = "openai"\n'
                          f'model = "bench"\nbase_url = "{base_url}"\n'
                          f"concurrency = {args.concurrency}\n", encoding="utf-8")
        store = folder / "bench.duckdb"
        _contam(["import", "items", str(folder / "items.csv")], store)
        commands = dict(COMMANDS)
        if args.answers_by_sql:
            _insert_answers(store)
            del commands["run"]
        shutil.copy(store, folder / "against.duckdb")
        runs = [("this", store, None)] + ([("against", folder / "against.duckdb", args.against)]
                                          if args.against else [])
        return [(label, {name: _contam([a.format(config=config, folder=folder) for a in argv],
                                       path, checkout) for name, argv in commands.items()})
                for label, path, checkout in runs]


# Model m's answer to every item, as `contam run` against the emulator would leave it. Run in a
# child: a parent grown by the INSERT would count in the next child's peak RSS (it is forked
# from this process, and Linux carries the peak over the exec).
_INSERT_ANSWERS = """
import sys, duckdb
with duckdb.connect(sys.argv[1]) as con:
    con.execute(\"\"\"INSERT INTO answers (run_id, item_id, model, provider, provider_model,
                       served_model, answer_raw, answer, finish_reason, latency_s, created_at)
                   SELECT 'bench', item_id, 'm', 'openai', 'bench', 'bench',
                          'The answer to ' || question, 'the answer to ' || lower(question),
                          'stop', 0.001, now()::TIMESTAMP FROM items ORDER BY seq\"\"\")
"""


def _insert_answers(store: Path) -> None:
    subprocess.run([sys.executable, "-c", _INSERT_ANSWERS, str(store)], check=True)


def _write_items(path: Path, n: int) -> None:
    """``n`` items, alternately of the report's two default subsets (official, fan)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "title", "subset", "question", "reference"])
        writer.writerows([f"q{i:07d}", "Bench", ("official", "fan")[i % 2], f"Question {i}?",
                          f"Reference {i}"] for i in range(n))


def _contam(argv: list[str], store: Path, checkout: Path | None = None) -> tuple[float, float]:
    """Run one contam command as a child (of ``checkout`` where given, else of this one); its
    wall seconds and peak RSS (MB). Raises on failure."""
    command = [sys.executable, "-m", "contam.harness.cli", *argv, "--store", str(store)]
    environment = {**os.environ, "PYTHONPATH": str(checkout.resolve())} if checkout else None
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env=environment, cwd=checkout)  # -m puts the folder first on the path
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    errors = child.stderr.read().decode(errors="replace").strip().splitlines()
    child.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"contam {argv[0]} failed: {errors[-1] if errors else 'no message'}")
    return wall, usage.ru_maxrss / 1024  # KiB on Linux


def _line(cells: int, figures: dict[str, tuple[float, float]], label: str) -> str:
    parts = [f"{name} {wall:7.1f} s {rss:7.1f} MB" for name, (wall, rss) in figures.items()]
    return f"cells {cells:>9,} {label:>7}   " + "   ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
