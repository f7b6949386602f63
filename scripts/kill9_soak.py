"""kill -9 a 2,400-cell `contam run` at random moments, resume it, and count what was lost.

    python scripts/kill9_soak.py [--kills 10] [--items 600] [--latency-ms 150] [--seed 1]

An emulator runs in a child process of its own. Each answer it sends carries a serial number
(``[reply N]``), and the emulator logs the number and the time as it sends it. `contam run`
(600 items x the four protocols) runs in another child, is killed with SIGKILL at a random moment,
and is started again, until it has been killed ``--kills`` times; a last run finishes the work
(the resume). Then the store is compared with the emulator's log:

- sent, not in the store: answers the emulator sent that no `answers` row holds. Some of them
  were in flight at a kill, and no client could have kept them: asked before the kill and sent
  after it (to a dead process), or sent in the last ``--in-flight-ms`` before it (still in the
  socket, never read). Those are counted apart; the rest must be 0;
- duplicates: cells with more than one answer, and serial numbers stored twice.

Exit status 1 when an answer sent before the in-flight window is missing, or anything is
duplicated, or cells are left unanswered.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contam.harness.store import Store  # noqa: E402

PROTOCOLS = ("openai", "gemini", "anthropic", "ollama")
SERIAL = re.compile(r"\[reply (\d+)\]")

# The emulator child: answers carry a serial number; each is logged once it is on the socket,
# with the time its request had arrived and the time it went out.
EMULATOR = """
import itertools, re, sys, time
from contam.harness.emulator.server import EmulatorSettings, default_answer, run_emulator

log = open(sys.argv[1], "a", buffering=1)
serials = itertools.count()
serial_in = re.compile(rb"\\[reply (\\d+)\\]")

def responder(question):
    return f"{default_answer(question)} [reply {next(serials)}]"

def on_sent(request, answer):
    found = serial_in.search(answer.body)
    if found:
        log.write(f"{int(found.group(1))} {request.received_at:.6f} {time.time():.6f}\\n")

settings = EmulatorSettings(latency_ms=float(sys.argv[2]), responder=responder, on_sent=on_sent,
                            record=False, seed=int(sys.argv[3]))
with run_emulator(settings) as emulator:
    print(emulator.url, flush=True)
    sys.stdin.read()  # until the soak closes our stdin
"""


def main() -> int:
    args = _arguments()
    rng = random.Random(args.seed)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "soak-key-1",
           "GEMINI_API_KEY": "soak-key-2", "ANTHROPIC_API_KEY": "soak-key-3"}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sent_log = folder / "sent.log"
        emulator = subprocess.Popen([sys.executable, "-c", EMULATOR, str(sent_log),
                                     str(args.latency_ms), str(args.seed)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                    env=env)
        try:
            config = _config(folder, emulator.stdout.readline().strip(), args.items,
                             args.concurrency)
            kills, runs = _kill_and_resume(config, folder / "soak.duckdb", args, rng, env)
        finally:
            emulator.stdin.close()
            emulator.wait(timeout=30)
        return _report(folder / "soak.duckdb", sent_log, kills, runs, args)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--items", type=int, default=600, help="x 4 protocols = cells")
    parser.add_argument("--latency-ms", type=float, default=150.0)
    parser.add_argument("--concurrency", type=int, default=4, help="in flight per model")
    parser.add_argument("--in-flight-ms", type=float, default=100.0,
                        help="answers sent this close before a kill count as in flight")
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_args()


def _config(folder: Path, url: str, items: int, concurrency: int) -> Path:
    """items.csv and run.toml: every protocol's model at the emulator."""
    with (folder / "items.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "title", "subset", "question", "reference"])
        writer.writerows([f"q{i:05d}", "Pokémon Red", "official", f"Question {i}?", f"Ref {i}"]
                         for i in range(items))
    paths = {"openai": "/v1"}  # the OpenAI client's base_url ends in /v1
    entries = [f'[[models]]\nname = "{p}-m"\nprovider = "{p}"\nmodel = "emu-{p}"\n'
               f'base_url = "{url}{paths.get(p, "")}"\nconcurrency = {concurrency}\n'
               f"timeout_s = 30\nmax_attempts = 5\n" for p in PROTOCOLS]
    path = folder / "run.toml"
    path.write_text('items = "items.csv"\n\n' + "\n".join(entries), encoding="utf-8")
    return path


def _kill_and_resume(config: Path, store: Path, args: argparse.Namespace, rng: random.Random,
                     env: dict[str, str]) -> tuple[list[float], int]:
    """Start `contam run`, SIGKILL it after a random 1.5-4 s (startup included) until
    ``args.kills`` kills landed mid-run; then one run to the end. Returns the kill times."""
    command = [sys.executable, "-m", "contam.harness.cli", "run", str(config), "--store", str(store),
               "--no-progress"]
    kills: list[float] = []
    runs = 0
    while len(kills) < args.kills:
        run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=env)
        runs += 1
        try:
            run.wait(timeout=rng.uniform(1.5, 4.0))
            print(f"run {runs}: finished before its kill (exit {run.returncode})", file=sys.stderr)
            break
        except subprocess.TimeoutExpired:
            os.kill(run.pid, signal.SIGKILL)
            kills.append(time.time())
            run.wait()
    final = subprocess.run(command, capture_output=True, text=True, env=env)
    runs += 1
    print(f"resume run: exit {final.returncode}; {final.stdout.strip().splitlines()[-4:]}",
          file=sys.stderr)
    return kills, runs


def _report(store_path: Path, sent_log: Path, kills: list[float], runs: int,
            args: argparse.Namespace) -> int:
    sent = dict(_sent(sent_log))
    with Store(store_path, read_only=True) as store:
        raws = store.query("SELECT answer_raw FROM answers")
        stored = [SERIAL.search(raw or "") for (raw,) in raws]
        cells, distinct = store.query("SELECT count(*), count(DISTINCT (item_id, model)) "
                                      "FROM answers")[0]
    serials = [int(m.group(1)) for m in stored if m]
    missing = set(sent) - set(serials)
    in_flight = {s for s in missing if _in_flight(*sent[s], kills, args.in_flight_ms / 1000)}
    lost = missing - in_flight
    twice = len(serials) - len(set(serials))
    expected = args.items * len(PROTOCOLS)
    print(f"kills: {len(kills)} (runs: {runs}, the last one the resume)")
    print(f"cells: {expected}; answered in the store: {distinct}")
    print(f"answers the emulator sent: {len(sent)}")
    after = sum(1 for s in in_flight if _before_kill(sent[s][1], kills) > args.in_flight_ms / 1000)
    print(f"sent but not in the store: {len(lost)} (+ {len(in_flight)} in flight at a kill: "
          f"{after} asked before it and sent after it, {len(in_flight) - after} sent "
          f"< {args.in_flight_ms:g} ms before it)")
    print(f"duplicates: {cells - distinct} cells answered twice, {twice} serials stored twice")
    if lost:
        gaps = sorted(_before_kill(sent[s][1], kills) for s in lost)
        print(f"the lost ones were sent {gaps[0] * 1000:.0f}-{gaps[-1] * 1000:.0f} ms before "
              f"the kill that followed")
    return 0 if not lost and cells == distinct and not twice and distinct == expected else 1


def _sent(log: Path):
    """(serial, (asked at, sent at)) for every answer the emulator put on a socket."""
    for line in log.read_text().splitlines():
        serial, asked_at, sent_at = line.split()
        yield int(serial), (float(asked_at), float(sent_at))


def _before_kill(sent_at: float, kills: list[float]) -> float:
    """Seconds from sending to the next kill (inf when no kill followed)."""
    return min((kill - sent_at for kill in kills if kill >= sent_at), default=float("inf"))


def _in_flight(asked_at: float, sent_at: float, kills: list[float], window_s: float) -> bool:
    """Asked before a kill and sent after it, or sent within ``window_s`` before it."""
    return any(asked_at < kill and sent_at > kill - window_s for kill in kills)


if __name__ == "__main__":
    sys.exit(main())
