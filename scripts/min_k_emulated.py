"""min-k against emulated vLLM servers, a contaminated and a clean one: the report's AUCs and figures.

    .venv/bin/python scripts/min_k_emulated.py [--items 200] [--models 4] [--out runs/min-k-emulated]

Writes ITEMS synthetic items (half official, half fan), serves them from an in-process emulator
(``contam emulator --items FILE --profile P`` in code) once per profile, runs
``contam probe min-k`` on MODELS emulated vLLM models and ``contam report`` on the store, and
prints each model's ROC-AUC (documented vs undocumented) with its interval, the wall time of the
probe and the figure's path. The contaminated profile should give AUCs near 1, the clean one
near 0.5.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import time
from pathlib import Path

from contam.harness.cli import main
from contam.harness.emulator.knowledge import Knowledge
from contam.harness.emulator.server import EmulatorSettings, run_emulator

SEED = 7


def write_items(path: Path, n: int) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "title", "subset", "question", "reference"])
        for i in range(n):
            official = i % 2 == 0
            writer.writerow([f"q{i:04d}", "Pokémon Red" if official else "Pokémon Brown",
                             "official" if official else "fan",
                             f"Which reward does trainer {i} give?", f"Reward {i}"])
    return path


def write_config(folder: Path, items: Path, base_url: str, models: int) -> Path:
    lines = ['store = "min-k.duckdb"', f'items = "{items.resolve()}"']
    for n in range(models):
        lines += ["", "[[models]]", f'name = "vllm-{n}"', 'provider = "openai"',
                  f'model = "emu-vllm-{n}"', f'base_url = "{base_url}"',
                  'api_key_env = "CONTAM_EMULATOR_KEY"', "concurrency = 16"]
    config = folder / "min-k.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


def one_profile(profile: str, items: Path, out: Path, models: int) -> None:
    folder = out / profile
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "min-k.duckdb").unlink(missing_ok=True)
    knowledge = Knowledge.from_file(items, profile=profile, seed=SEED)
    with run_emulator(EmulatorSettings(knowledge=knowledge, seed=SEED, record=False)) as emu:
        config = write_config(folder, items, emu.base_url("openai"), models)
        started = time.perf_counter()
        assert main(["probe", "min-k", str(config), "--no-progress"]) == 0
        wall = time.perf_counter() - started
    assert main(["report", "--store", str(folder / "min-k.duckdb"), "--out", str(folder / "report")]) == 0
    report = json.loads((folder / "report" / "report.json").read_text("utf-8"))
    print(f"\n{profile}: probe min-k of {models} models x {len(knowledge.items)} items in {wall:.1f} s")
    for row in report["probes"]["min-k"]["rows"]:
        print(f"  {row['model']} {row['metric']}: AUC {row['auc']:.3f} "
              f"[{row['auc_ci_low']:.3f}, {row['auc_ci_high']:.3f}], p {row['mannwhitney_p']:.2g}")
    print(f"  figure: {folder / 'report' / 'fig_probe_min_k.png'}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--out", default="runs/min-k-emulated")
    return parser.parse_args()


if __name__ == "__main__":
    args = parse_args()
    os.environ.setdefault("CONTAM_EMULATOR_KEY", "emulated")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    items = write_items(out / "items.csv", args.items)
    for profile in ("contaminated", "clean"):
        one_profile(profile, items, out, args.models)
