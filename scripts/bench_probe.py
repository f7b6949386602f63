"""cdd at scale: N samples over many items on four emulated models (one per wire protocol), a
clean run and a run killed with SIGKILL and resumed; prints requests sent against samples stored,
wall time, and what the resumed probe asked against what the store lacked.

    .venv/bin/python scripts/bench_probe.py [--items 400] [--samples 20] [--latency-ms 50]
                                            [--concurrency 32] [--kill-at 0.1]

The emulator runs in this process (so it outlives the kill); `contam probe cdd` runs as a child.
OpenAI asks each item's samples as one request (``n``), Gemini in requests of at most 8
(``candidateCount``), Anthropic and Ollama one request per sample. The killed run is stopped once
the emulator has received ``--kill-at`` of the requests a whole run sends; opening its store
replays the reply journal, and the samples the store then lacks must be exactly the samples the
resumed run asks for (summed over the ``n`` / ``candidateCount`` of its requests).
"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from contam.harness.config import load_config
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.jobs.probe import make_probe
from contam.harness.jobs.probe_work import ProbePlan, missing_count
from contam.harness.store import Store

KEYS = {"OPENAI_API_KEY": "sk-bench-probe-0000", "GEMINI_API_KEY": "gemini-bench-probe-0000",
        "ANTHROPIC_API_KEY": "anthropic-bench-probe-0000"}
PROTOCOLS = ("openai", "gemini", "anthropic", "ollama")
_PATHS = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic", "/api/generate": "ollama"}


def write_setup(folder: Path, items: int, url: str, concurrency: int) -> Path:
    with (folder / "items.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "title", "subset", "question", "reference"])
        for i in range(items):
            writer.writerow([f"q{i:04d}", "Pokémon Red" if i % 2 else "Pokémon Brown",
                             "official" if i % 2 else "fan", f"Which badge is number {i}?",
                             f"Badge {i}"])
    lines = ['items = "items.csv"']
    for protocol in PROTOCOLS:
        base = f"{url}/v1" if protocol == "openai" else url
        lines += ["", "[[models]]", f'name = "{protocol}-m"', f'provider = "{protocol}"',
                  f'model = "emu-{protocol}"', f'base_url = "{base}"', f"concurrency = {concurrency}",
                  "max_attempts = 3", "timeout_s = 30"]
    config = folder / "probe.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


class Ledger:
    """Every generate request the emulator answered: per protocol, requests and samples asked."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.samples: Counter[str] = Counter()

    def __call__(self, request, answer) -> None:
        protocol = _PATHS.get(request.path) or ("gemini" if request.path.endswith(":generateContent")
                                                else None)
        if protocol is None or answer.status != 200:
            return
        body = request.body
        self.requests[protocol] += 1
        self.samples[protocol] += body.get("n") or (body.get("generationConfig") or {}).get(
            "candidateCount") or 1

    def snapshot(self) -> tuple[Counter[str], Counter[str]]:
        return Counter(self.requests), Counter(self.samples)


def start_probe(config: Path, store: Path, samples: int) -> subprocess.Popen:
    env = {**os.environ, **KEYS, "PYTHONPATH": os.getcwd()}
    return subprocess.Popen([sys.executable, "-m", "contam.harness.cli", "probe", "cdd", str(config),
                             "--store", str(store), "--samples", str(samples), "--no-progress"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def store_rows(store: Path) -> tuple[int, int]:
    """(probe_samples rows, cells scored); opening the store writable replays its journal."""
    with Store(store) as opened:
        return (opened.count("probe_samples"),
                opened.query("SELECT count(*) FROM latest_probe_scores WHERE metric = 'flagged'")[0][0])


def missing(config: Path, store: Path, samples: int) -> int:
    loaded = load_config(config)
    with Store(store) as opened:
        plan = ProbePlan.build(opened, make_probe("cdd", loaded, {"samples": samples}), None)
        return sum(missing_count(opened, plan, spec) for spec in loaded.models)


def clean_run(folder: Path, ledger: Ledger, args: argparse.Namespace, config: Path) -> int:
    store = folder / "clean.duckdb"
    before_requests, before_samples = ledger.snapshot()
    started = time.monotonic()
    run = start_probe(config, store, args.samples)
    status = run.wait()
    wall = time.monotonic() - started
    requests, samples = ledger.requests - before_requests, ledger.samples - before_samples
    rows, scored = store_rows(store)
    print(f"clean run: exit {status}, wall {wall:.1f} s, {sum(requests.values())} requests "
          f"answered for {sum(samples.values())} samples; store: {rows} samples, {scored} cells scored")
    per_protocol(requests, samples)
    return rows


def per_protocol(requests: Counter[str], samples: Counter[str]) -> None:
    for protocol in PROTOCOLS:
        print(f"  {protocol:<9} {requests[protocol]:>6} requests  {samples[protocol]:>6} samples  "
              f"({samples[protocol] / max(requests[protocol], 1):.1f} per request)")


def killed_run(folder: Path, ledger: Ledger, args: argparse.Namespace, config: Path,
               whole: int) -> bool:
    store = folder / "killed.duckdb"
    start = sum(ledger.requests.values())
    run = start_probe(config, store, args.samples)
    while sum(ledger.requests.values()) - start < args.kill_at * whole:
        if run.poll() is not None:
            print(f"the run ended before the kill: {run.stderr.read().decode().strip()}")
            return False
        time.sleep(0.01)
    run.send_signal(signal.SIGKILL)
    run.wait()
    killed_at = sum(ledger.requests.values()) - start
    rows, _ = store_rows(store)
    left = missing(config, store, args.samples)
    print(f"killed run: SIGKILL after {killed_at} requests answered; store after journal replay: "
          f"{rows} samples, {left} missing")
    return resume(store, ledger, args, config, left)


def resume(store: Path, ledger: Ledger, args: argparse.Namespace, config: Path, left: int) -> bool:
    before_requests, before_samples = ledger.snapshot()
    started = time.monotonic()
    status = start_probe(config, store, args.samples).wait()
    wall = time.monotonic() - started
    requests, samples = ledger.requests - before_requests, ledger.samples - before_samples
    rows, scored = store_rows(store)
    print(f"resumed run: exit {status}, wall {wall:.1f} s, {sum(requests.values())} requests asking "
          f"{sum(samples.values())} samples (the store lacked {left}); store: {rows} samples, "
          f"{scored} cells scored, {missing(config, store, args.samples)} missing")
    per_protocol(requests, samples)
    return status == 0 and sum(samples.values()) == left


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--kill-at", type=float, default=0.1,
                        help="kill once this share of a whole run's requests is answered (early "
                             "enough that every protocol still has work, n and candidateCount too)")
    args = parser.parse_args()
    ledger = Ledger()
    settings = EmulatorSettings(latency_ms=args.latency_ms, record=False, on_sent=ledger)
    with tempfile.TemporaryDirectory() as tmp, run_emulator(settings) as emu:
        folder = Path(tmp)
        config = write_setup(folder, args.items, emu.url, args.concurrency)
        expected = args.items * (args.samples + 1) * len(PROTOCOLS)
        print(f"cdd: {args.items} items x {len(PROTOCOLS)} models, 1 greedy + {args.samples} "
              f"samples each = {expected} samples; emulator latency {args.latency_ms:g} ms, "
              f"concurrency {args.concurrency} per model; {os.cpu_count()} CPUs, load average "
              f"{os.getloadavg()[0]:.1f}")
        rows = clean_run(folder, ledger, args, config)
        whole = sum(ledger.requests.values())
        ok = rows == expected and killed_run(folder, ledger, args, config, whole)
    print("OK: every sample stored once; the resumed run asked exactly the missing samples"
          if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
