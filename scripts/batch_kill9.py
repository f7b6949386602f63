"""kill -9 a `contam run --batch` while its jobs run, run it again, and count what the server saw.

    .venv/bin/python scripts/batch_kill9.py [--items 1000] [--processing-s 3] [--fail-rate 0.03]
                                            [--expire-rate 0.02]

The emulator runs in this process (so it outlives the kills); `contam run` runs as a child. The
first run is killed with SIGKILL once the emulator has received every model's job and again, if
the second run is still at work, while its follow-up jobs run; the last run goes to the end. Then:
every cell must be answered, and the emulator must have received each cell's request exactly once
plus once more per failed or expired line recorded in `attempts` (never a second paid copy of a
request that had not failed).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from batchkit import KEYS, PROVIDERS, answers, failed_attempts, server_key, write_setup  # scripts/batchkit.py

from contam.harness.emulator.server import EmulatorSettings, run_emulator

_CREATES = ("/v1/batches", "/v1/messages/batches")


def creates(emu) -> int:
    return sum(1 for r in emu.requests if r.method == "POST" and (
        r.path in _CREATES or r.path.endswith(":batchGenerateContent")))


def start_run(config: Path, store: Path) -> subprocess.Popen:
    env = {**os.environ, **KEYS, "PYTHONPATH": os.getcwd()}
    return subprocess.Popen([sys.executable, "-m", "contam.harness.cli", "run", str(config), "--batch",
                             "--store", str(store), "--batch-poll-max", "0.3", "--no-progress"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def kill_when(run: subprocess.Popen, emu, jobs: int, timeout: float = 120) -> bool:
    """SIGKILL once the emulator has received ``jobs`` job creations; False if the run ended first."""
    deadline = time.monotonic() + timeout
    while creates(emu) < jobs and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    if run.poll() is not None:
        return False
    time.sleep(0.2)
    run.send_signal(signal.SIGKILL)
    run.wait()
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--processing-s", type=float, default=3.0)
    parser.add_argument("--fail-rate", type=float, default=0.03)
    parser.add_argument("--expire-rate", type=float, default=0.02)
    args = parser.parse_args()
    settings = EmulatorSettings(batch_processing_s=args.processing_s, batch_fail_rate=args.fail_rate,
                                batch_expire_rate=args.expire_rate, seed=17, record=True)
    with tempfile.TemporaryDirectory() as tmp, run_emulator(settings) as emu:
        folder = Path(tmp)
        config, store = write_setup(folder, args.items, emu.url), folder / "s.duckdb"
        kills = 0
        first = start_run(config, store)
        kills += kill_when(first, emu, len(PROVIDERS))
        print(f"run 1: killed -9 after the emulator received {creates(emu)} jobs")
        second = start_run(config, store)
        if kill_when(second, emu, creates(emu) + 1, timeout=args.processing_s * 3):
            kills += 1
            print(f"run 2: killed -9 while follow-up jobs ran ({creates(emu)} jobs so far)")
        last = start_run(config, store)
        status = last.wait()
        print(f"last run: exit {status} {last.stderr.read().decode().strip()}")
        return report(emu, store, args.items, kills)


def report(emu, store: Path, items: int, kills: int) -> int:
    answered, failed = answers(store), failed_attempts(store)
    seen = emu.batch_line_counts
    cells = [(f"q{i:06d}", f"{p}-m") for i in range(items) for p in PROVIDERS]
    over = [c for c in cells if seen[server_key(*c)] > 1 + failed.get(c, 0)]
    under = [c for c in cells if seen[server_key(*c)] < 1]
    print(f"cells: {len(cells)}; answered: {sum(1 for c in cells if c in answered)}; kills: {kills}; "
          f"jobs created: {creates(emu)}")
    print(f"batch lines the server received: {sum(seen.values())} = {len(cells)} cells once + "
          f"{sum(seen.values()) - len(cells)} again after a recorded failure "
          f"({sum(failed.values())} failed or expired lines in attempts)")
    print(f"cells received more often than once plus their failures: {len(over)}; never received: "
          f"{len(under)}")
    ok = not over and not under and all(c in answered for c in cells)
    print("OK: every cell answered, none paid twice" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
