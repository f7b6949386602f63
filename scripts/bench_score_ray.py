"""The BERTScore pass on a local Ray against the single-process pass, on this machine.

A store of ``--items`` x ``--models`` answers (short synthetic texts) is scored with the offline
all-MiniLM-L6-v2 (layer 5, no rescaling) three times, each into a fresh copy: in this process on
one torch thread, then with ``--ray`` on a local Ray of one one-core actor (the same work, so the
ratio is Ray's overhead), then on a local Ray of one one-core actor per CPU of the machine.
Ray's start-up is timed apart from the pass. One thread per process everywhere: on two shared
vCPUs, torch's own two threads ran the single-process pass ~4x slower than one thread.

    .venv/bin/python scripts/bench_score_ray.py [--items 400] [--models 10] [--shard-pairs 500]

Prints the wall time of each pass and the overhead ratio (Ray pass / single-process pass), and
the largest difference between their values (see tests/test_score_ray.py for why it is not 0).
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from contam.harness.jobs.score import score_store
from contam.harness.jobs.score_ray import RayOptions
from contam.harness.store import Store, utc_now
from contam.metrics.bertscore import OFFLINE_ENCODER

WORDS = ("pokemon red blue gym badge brock misty surf flash cut strength tm hm city route cave "
         "trainer rival oak lab potion ball master great ultra").split()


def fill(path: Path, items: int, models: int) -> None:
    rng = random.Random(7)
    text = lambda lo, hi: " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))  # noqa: E731
    references = [text(2, 12) for _ in range(items)]
    with Store(path, create=True) as store:
        store.append("items", [{"item_id": f"i{i:05d}", "reference": references[i],
                                "added_at": utc_now()} for i in range(items)])
        store.append("answers", [{"item_id": f"i{i:05d}", "model": f"m{m}", "answer": text(1, 16),
                                  "created_at": utc_now()} for i in range(items) for m in range(models)])


def timed_pass(template: Path, folder: Path, name: str, shard_pairs: int,
               ray: RayOptions | None) -> tuple[float, dict]:
    path = folder / f"{name}.duckdb"
    shutil.copy(template, path)
    started = time.perf_counter()
    with Store(path) as store:
        score_store(store, ["bertscore"], bertscore_model=OFFLINE_ENCODER, rescale=False,
                    ray=ray, shard_pairs=shard_pairs)
    wall = time.perf_counter() - started
    with Store(path, read_only=True) as store:
        return wall, dict(((i, m), v) for i, m, v in store.query(
            "SELECT item_id, model, value FROM scores"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--shard-pairs", type=int, default=500)
    args = parser.parse_args()
    import ray
    import torch

    import bert_score  # noqa: F401  (transformers' import, ~5 s here, kept out of the timings)

    torch.set_num_threads(1)  # as a one-core actor runs (Ray sets OMP_NUM_THREADS=1 there)
    with tempfile.TemporaryDirectory() as tmp:
        template = Path(tmp) / "template.duckdb"
        fill(template, args.items, args.models)
        single, expected = timed_pass(template, Path(tmp), "single", args.shard_pairs, None)
        runs = {actors: ray_pass(template, Path(tmp), args.shard_pairs, actors)
                for actors in (1, os.cpu_count() or 1)}
    pairs = args.items * args.models
    print(f"{pairs} pairs, shards of {args.shard_pairs}, all-MiniLM-L6-v2 layer 5, one core each")
    print(f"single process, 1 thread: {single:.1f} s ({pairs / single:.0f} pairs/s)")
    for actors, (startup, wall, values) in runs.items():
        diff = max(abs(values[k] - v) for k, v in expected.items())
        print(f"ray, {actors} one-core actor(s): {wall:.1f} s = {wall / single:.2f}x the "
              f"single-process pass (+ {startup:.1f} s of ray.init); largest difference {diff:.1e}")
    return 0


def ray_pass(template: Path, folder: Path, shard_pairs: int, actors: int) -> tuple[float, float, dict]:
    """A local Ray of ``actors`` CPUs (one one-core actor each): ray.init's seconds, the pass."""
    import ray

    started = time.perf_counter()
    ray.init(num_cpus=actors, include_dashboard=False, logging_level=logging.ERROR)
    startup = time.perf_counter() - started
    try:
        wall, values = timed_pass(template, folder, f"ray{actors}", shard_pairs,
                                  RayOptions(cpus_per_actor=1))
    finally:
        ray.shutdown()
    return startup, wall, values


if __name__ == "__main__":
    sys.exit(main())
