"""CPU the reply journal adds per reply: one orjson line, a write and a flush, and an emptying
after every 50 (a batch), measured alone so the figure is not lost in a loaded machine's noise.

    python scripts/bench_journal.py [N_REPLIES]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contam.harness.store import utc_now  # noqa: E402
from contam.harness.store.journal import Journal, reply_key  # noqa: E402

BATCH = 50


def reply_rows() -> dict:
    """What `contam run` writes for one reply: its answers row and its ok attempts row."""
    now, run_id, text = utc_now(), "run-20261201T000000-abcdef", "Emulated answer: " + "word " * 12
    cell = {"run_id": run_id, "item_id": "q000123", "model": "openai-bench"}
    return {"answers": [{**cell, "provider": "openai", "provider_model": "emu-openai",
                         "served_model": "emu-openai", "answer_raw": text, "answer": text.strip(),
                         "finish_reason": "stop", "input_tokens": 40, "output_tokens": 14,
                         "latency_s": 1.0012, "created_at": now}],
            "attempts": [{**cell, "attempt": 1, "started_at": now, "latency_s": 1.0012,
                          "outcome": "ok", "http_status": 200}]}


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    rows = reply_rows()
    with tempfile.TemporaryDirectory() as folder:
        journal = Journal(Path(folder) / "bench.duckdb.journal")
        started = time.process_time()
        for n in range(1, count + 1):
            if reply_key(rows) is not None:
                journal.append(rows)
            if n % BATCH == 0:
                journal.clear()
        cpu_s = time.process_time() - started
        journal.close(committed=True)
    print(f"{count:,} replies journaled: {cpu_s * 1e6 / count:.1f} us of CPU per reply")


if __name__ == "__main__":
    main()
