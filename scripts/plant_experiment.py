"""The planted-contamination experiment of the README ("Planted contamination"): fine-tune the
packaged SmolLM2-135M on half of examples/planted's 48 items (text at 1, 3 and 10 epochs, qa at 1
and 3), run every probe and the density study on the planted models and the base model, and print
what each probe detects. Each step is the real `contam` command; the timings are wall clock on
this machine.

    PYTHONPATH=$PWD python scripts/plant_experiment.py [--out runs/plant-experiment] [--table-only]

Reduced sample counts (stated in the table's notes): cdd takes --samples 10 on the base model and
the largest text and qa doses only; every generation is capped at 32 new tokens.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT_DOSES, QA_DOSES = (1, 3, 10), (1, 3)
CDD_SAMPLES = 10


def config_text(out: Path) -> str:
    """The experiment's config: the base model and every planted dose."""
    models = [("base", "SmolLM2-135M-Instruct.Q4_1.gguf")]
    models += [(f"text-e{d}", f"planted:exp-text-e{d}") for d in TEXT_DOSES]
    models += [(f"qa-e{d}", f"planted:exp-qa-e{d}") for d in QA_DOSES]
    tables = "".join(f'\n[[models]]\nname = "{name}"\nprovider = "local"\nmodel = "{model}"\n'
                     'concurrency = 8\ntimeout_s = 300\nparams = { max_new_tokens = 32 }\n'
                     for name, model in models)
    return (f'store = "{out / "experiment.duckdb"}"\n'
            f'items = "{ROOT / "examples/planted/items.csv"}"\n\n'
            '[study]\nname = "PlacesQA"\n\n'
            '[probes]\ntext = "{title}: {question}\\n{reference}"\n' + tables)


def contam(*args: str) -> float:
    """One `contam` command (plain progress); its wall time in seconds."""
    started = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1"}
    subprocess.run([sys.executable, "-m", "contam.harness.cli", *args, "--no-progress"], check=True,
                   env=env, cwd=ROOT)
    seconds = time.perf_counter() - started
    print(f"## contam {' '.join(args)}: {seconds:.0f} s", flush=True)
    return seconds


def run_all(config: Path) -> None:
    """Every step, in the order a researcher would take them."""
    text = ",".join(map(str, TEXT_DOSES))
    contam("plant", str(config), "--model", "base", "--format", "text", "--epochs", text,
           "--as", "exp-text")
    contam("plant", str(config), "--model", "base", "--format", "qa", "--epochs",
           ",".join(map(str, QA_DOSES)), "--as", "exp-qa")
    contam("probe", "min-k", str(config))
    contam("run", str(config))
    contam("score", "--store", str(config.parent / "experiment.duckdb"), "--metric",
           "bleu2,contains")
    contam("probe", "ts-guess", str(config))
    contam("probe", "guided", str(config))
    contam("probe", "cdd", str(config), "--samples", str(CDD_SAMPLES),
           "--models", f"base,text-e{TEXT_DOSES[-1]},qa-e{QA_DOSES[-1]}")


def print_table(store: Path) -> None:
    """The probe validation table, from the store (contam.harness.report.parts.validation)."""
    from contam.harness.report.texts.validation import markdown_table

    print(markdown_table(store))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "runs/plant-experiment"))
    parser.add_argument("--table-only", action="store_true", help="print the table of a finished run")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    config = out / "experiment.toml"
    config.write_text(config_text(out), encoding="utf-8")
    if not args.table_only:
        run_all(config)
    print_table(out / "experiment.duckdb")


if __name__ == "__main__":
    main()
