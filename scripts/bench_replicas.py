"""Throughput of one lane over two replicas of a served model against the same lane over one.

Each replica is a `contam emulator` process with ``--latency-ms`` per request and ``--slots``
requests worked on at once (the rest queue, as a vLLM or SGLang server's batch does): one replica
answers at most slots / latency requests a second, whatever the client sends. The lane's one
concurrency cap (``--concurrency``) is set above what one replica can take, so one replica is the
bottleneck and a second should double the throughput (the lane's cap and rate limit are shared).

    .venv/bin/python scripts/bench_replicas.py [--requests 256] [--latency-ms 500] [--slots 8]
                                               [--concurrency 32]

Prints, for one replica and for two, the wall time of the whole `contam run` (OpenAI protocol,
requests = items), answers per second, and the ratio; and how the answers spread over the
replicas (from `attempts.replica`).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

from batchkit import write_items  # scripts/batchkit.py

from contam.harness.cli import main as contam
from contam.harness.jobs.bench_floor import emulator_process
from contam.harness.store import Store


def write_config(path: Path, base_urls: list[str], concurrency: int) -> None:
    urls = ", ".join(f'"{url}"' for url in base_urls)
    path.write_text(f'items = "items.csv"\n\n[[models]]\nname = "served"\nprovider = "openai"\n'
                    f'model = "bench-served"\nbase_url = [{urls}]\nconcurrency = {concurrency}\n',
                    encoding="utf-8")


def timed_run(folder: Path, base_urls: list[str], args: argparse.Namespace) -> tuple[float, dict]:
    """Wall seconds of one `contam run` over ``base_urls``; answers per replica."""
    write_items(folder / "items.csv", args.requests)
    write_config(folder / "run.toml", base_urls, args.concurrency)
    store = folder / "bench.duckdb"
    with redirect_stdout(io.StringIO()):
        contam(["import", "items", str(folder / "items.csv"), "--store", str(store)])
        started = time.perf_counter()
        status = contam(["run", str(folder / "run.toml"), "--store", str(store), "--no-progress"])
        wall = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"contam run exited {status}")
    with Store(store, read_only=True) as opened:
        spread = dict(opened.query("SELECT replica, count(*) FROM attempts WHERE outcome = 'ok' "
                                   "GROUP BY replica ORDER BY replica"))
    return wall, spread


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=256)
    parser.add_argument("--latency-ms", type=float, default=500.0)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    os.environ["OPENAI_API_KEY"] = "sk-bench"
    with contextlib.ExitStack() as stack:
        replicas = [stack.enter_context(emulator_process(latency_ms=args.latency_ms,
                                                         slots=args.slots)) for _ in range(2)]
        urls = [replica.base_url("openai") for replica in replicas]
        results = {}
        for n in (1, 2):
            with tempfile.TemporaryDirectory() as folder:
                results[n] = timed_run(Path(folder), urls[:n], args)
    ceiling = args.slots / (args.latency_ms / 1000)
    print(f"{args.requests} requests, lane concurrency {args.concurrency}, each replica "
          f"{args.latency_ms:g} ms x {args.slots} slots (at most {ceiling:g} answers/s)")
    for n, (wall, spread) in results.items():
        print(f"{n} replica{'s' if n > 1 else ''}: {wall:.2f} s, {args.requests / wall:.1f} answers/s, "
              f"answers per replica {list(spread.values())}")
    print(f"two replicas / one: {results[1][0] / results[2][0]:.2f}x the throughput")
    return 0


if __name__ == "__main__":
    sys.exit(main())
