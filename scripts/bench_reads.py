"""Reads through a store host against reads of the file itself, and a run's throughput with and
without a reader hammering its host.

    python scripts/bench_reads.py [--requests 200] [--items 1000] [--latency-ms 50]
                                  [--concurrency 32] [--skip-run]

1. Latency. A store of 2 x ``--items`` answers, read ``--requests`` times with a simple query
   (``SELECT count(*) FROM answers``): first the file itself (no process holds it), then through
   the host of a child process that holds it for writing (idle). Two figures each: the query on
   a reader kept open, and a whole ``reading()`` per request (find the holder, open, query,
   close: what `contam sql` and a view's request do). Median and p99 in milliseconds.
2. Throughput. `contam run` (a child process) asks 2 models x ``--items`` items of a
   ``contam emulator`` child (``--latency-ms``, ``--concurrency`` per model), once alone and once
   while another child process reads the ``cells`` view through the run's host in a loop. Each
   run's answers per second (first request to last answer, from the store) and wall time; the
   reader's request count and latency.
3. Heavy readers. The same run alone and with each of ``--heavy-readers`` (default 1,6) child
   processes running a CPU-heavy query (a 40-million-row join) through the run's host in a loop:
   each run's wall time and its slowdown against the run alone (what the host's bounds on
   readers, two slots on idle-class threads, one DuckDB thread and a time limit, leave to the
   run, and what the readers' own processes take). Run it before and after a change back to
   back, and say the load: docs/explanation/performance.md, Readers beside a run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contam.harness.jobs.bench_floor import emulator_process  # noqa: E402
from contam.harness.store import Store  # noqa: E402
from contam.harness.store.access import reading  # noqa: E402

KEYS = {"OPENAI_API_KEY": "sk-bench", "ANTHROPIC_API_KEY": "an-bench"}
SIMPLE = "SELECT count(*) FROM answers"
HOLDER = """
import sys, time
from contam.harness.store import Store
from contam.harness.store.host import StoreHost
with Store(sys.argv[1]) as store, StoreHost(store, command="bench"):
    print("serving", flush=True)
    sys.stdin.read()
"""
HEAVY = "SELECT count(*), sum(hash(a.range * b.range)) FROM range(20000) a, range(2000) b"
# Reads through the run's host (the cells view, or argv[2]) until the run lets the store go.
HAMMER = """
import statistics, sys, time
from pathlib import Path
from contam.harness.store.access import reading
from contam.harness.store.discovery import find_holder
store = Path(sys.argv[1])
print("ready", flush=True)
while find_holder(store) is None:
    time.sleep(0.01)
times = []
with reading(store) as reader:
    while find_holder(store) is not None:
        start = time.perf_counter()
        try:
            reader.query(sys.argv[2] if len(sys.argv) > 2 else
                         "SELECT model, count(answer), avg(answer_words) FROM cells GROUP BY 1")
        except Exception as exc:
            print("reader stopped:", type(exc).__name__, exc, file=sys.stderr)
            break
        times.append(time.perf_counter() - start)
print(len(times), 1000 * statistics.median(times) if times else 0.0, flush=True)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--skip-run", action="store_true", help="the latency part only")
    parser.add_argument("--heavy-readers", default="1,6",
                        help="comma-separated counts of heavy readers (part 3; empty: skip it)")
    parser.add_argument("--only-heavy", action="store_true", help="part 3 only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        if not args.only_heavy:
            latency(Path(folder) / "latency.duckdb", args.items, args.requests)
            if not args.skip_run:
                throughput(Path(folder), args)
        if args.heavy_readers:
            heavy(Path(folder), args, [int(n) for n in args.heavy_readers.split(",")])
    return 0


# -- 1. latency ---------------------------------------------------------------------------------

def latency(store: Path, items: int, requests: int) -> None:
    with Store(store, create=True) as opened:
        opened.append("answers", [{"item_id": f"q{n}", "model": model, "answer": f"answer {n}"}
                                  for n in range(items) for model in ("a", "b")])
    print(f"read latency, {requests} requests of `{SIMPLE}` on {2 * items} answers "
          f"(median / p99 ms):")
    report("file itself, reader kept open", _kept_open(store, requests))
    report("file itself, reading() per request", _per_request(store, requests))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(store)], cwd=ROOT, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline().strip() == "serving"
        report("through the host, reader kept open", _kept_open(store, requests))
        report("through the host, reading() per request", _per_request(store, requests))
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


def _kept_open(store: Path, requests: int) -> list[float]:
    times = []
    with reading(store) as reader:
        reader.query(SIMPLE)  # the first request pays for imports
        for _ in range(requests):
            start = time.perf_counter()
            reader.query(SIMPLE)
            times.append(time.perf_counter() - start)
    return times


def _per_request(store: Path, requests: int) -> list[float]:
    times = []
    for _ in range(requests):
        start = time.perf_counter()
        with reading(store) as reader:
            reader.query(SIMPLE)
        times.append(time.perf_counter() - start)
    return times


def report(label: str, times: list[float]) -> None:
    p99 = statistics.quantiles(times, n=100, method="inclusive")[98]
    print(f"  {label:<42} {1000 * statistics.median(times):8.2f} {1000 * p99:8.2f}")


# -- 2. throughput ------------------------------------------------------------------------------

def throughput(folder: Path, args: argparse.Namespace) -> None:
    print(f"contam run, 2 models x {args.items} items, concurrency {args.concurrency} per model, "
          f"emulator latency {args.latency_ms:g} ms (a child process):")
    with emulator_process(latency_ms=args.latency_ms) as emulator:
        for hammered in (False, True):
            run_folder = folder / ("hammered" if hammered else "alone")
            run_folder.mkdir()
            config = _config(run_folder, emulator.base_url, args)
            print("  " + _one_run(run_folder / "s.duckdb", config, hammered))


def _one_run(store: Path, config: Path, hammered: bool) -> str:
    hammer = (subprocess.Popen([sys.executable, "-c", HAMMER, str(store)], cwd=ROOT, text=True,
                               stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
              if hammered else None)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "contam.harness.cli", "run", str(config), "--no-progress"],
                          cwd=ROOT, env={**os.environ, **KEYS, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    answers, span = _answered(store)
    line = (f"{'with a reader' if hammered else 'alone':<14} exit {done.returncode}, "
            f"{answers} answers, {answers / span:7.1f} answers/s over {span:.2f} s, wall {wall:.2f} s")
    if hammer is not None:
        count, median = hammer.communicate(timeout=60)[0].strip().splitlines()[-1].split()
        line += f"; the reader: {count} reads of the cells view, median {float(median):.1f} ms"
    return line


# -- 3. heavy readers ---------------------------------------------------------------------------

def heavy(folder: Path, args: argparse.Namespace, counts: list[int]) -> None:
    print(f"contam run, 2 models x {args.items} items, with heavy readers through its host "
          f"(`{HEAVY}` in a loop each):")
    with emulator_process(latency_ms=args.latency_ms) as emulator:
        alone = None
        for readers in [0, *counts]:
            run_folder = folder / f"heavy-{readers}"
            run_folder.mkdir()
            config = _config(run_folder, emulator.base_url, args)
            wall, done, reads = _heavy_run(run_folder / "s.duckdb", config, readers)
            answers, span = _answered(run_folder / "s.duckdb")
            alone = alone or span
            print(f"  {readers} heavy reader{'s' if readers != 1 else ' '}  exit {done}, "
                  f"{answers} answers in {span:6.2f} s (x{span / alone:4.2f} the run alone), "
                  f"wall {wall:6.2f} s; {reads} heavy reads finished")


def _heavy_run(store: Path, config: Path, readers: int) -> tuple[float, int, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    hammers = [subprocess.Popen([sys.executable, "-c", HAMMER, str(store), HEAVY], cwd=ROOT,
                                text=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=env) for _ in range(readers)]
    for hammer in hammers:  # their imports done: the run competes with their reads only
        assert hammer.stdout.readline().strip() == "ready"
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "contam.harness.cli", "run", str(config), "--no-progress"],
                          cwd=ROOT, env={**env, **KEYS}, capture_output=True, text=True)
    wall = time.perf_counter() - start
    reads = sum(_reads_done(hammer.communicate(timeout=300)[0]) for hammer in hammers)
    return wall, done.returncode, reads


def _reads_done(output: str) -> int:
    """The count a HAMMER child printed last (DuckDB's progress bar may come before it)."""
    last = output.strip().splitlines()[-1:] or ["0"]
    return int(last[0].split()[0]) if last[0].split()[0].isdigit() else 0


def _answered(store: Path) -> tuple[int, float]:
    with Store(store, read_only=True) as opened:
        answers = opened.count("answers")
        [(span,)] = opened.query("SELECT epoch((SELECT max(created_at) FROM answers)) "
                                 "- epoch((SELECT min(started_at) FROM attempts))")
    return answers, span


def _config(folder: Path, base_url, args: argparse.Namespace) -> Path:
    items = folder / "items.csv"
    rows = ["item_id,title,subset,question,reference"]
    rows += [f"q{n:05d},Title {n % 7},{'official' if n % 2 else 'fan'},Question {n}?,Ref {n}"
             for n in range(args.items)]
    items.write_text("\n".join(rows) + "\n", encoding="utf-8")
    models = [f'[[models]]\nname = "{p}-bench"\nprovider = "{p}"\nmodel = "bench-{p}"\n'
              f'base_url = "{base_url(p)}"\nconcurrency = {args.concurrency}\n'
              for p in ("openai", "anthropic")]
    config = folder / "run.toml"
    config.write_text('store = "s.duckdb"\nitems = "items.csv"\n\n' + "\n".join(models),
                      encoding="utf-8")
    return config


if __name__ == "__main__":
    sys.exit(main())
