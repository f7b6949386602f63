"""`contam` subcommands. Thin: parse, call, print.

Each subcommand's work lives in its own module and is imported only when that subcommand runs,
so `contam sql` never pays for importing torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from harness import __version__
from harness.errors import UserError
from harness.logs import configure_logging
from harness.store import DEFAULT_STORE

__all__ = ["main", "build_parser"]

# subcommand -> "module:function"; each function takes the parsed args and returns an exit status.
HANDLERS = {
    "demo": "harness.jobs.demo:demo_command",
    "import": "harness.jobs.importing:import_command",
    "run": "harness.jobs.run:run_command",
    "judge": "harness.jobs.judge:judge_command",
    "score": "harness.jobs.score:score_command",
    "report": "harness.jobs.report:report_command",
    "sql": "harness.jobs.sql:sql_command",
    "emulator": "harness.emulator.server:emulator_command",
    "bench": "harness.jobs.bench:bench_command",
}


def _store(parser: argparse.ArgumentParser, default: str | None = DEFAULT_STORE) -> None:
    parser.add_argument("--store", default=default, help=f"DuckDB store (default {DEFAULT_STORE})")


def _progress(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-progress", action="store_true",
                        help="plain periodic log lines instead of the live display")


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="bundled items -> local model -> scores -> report, offline")
    p.add_argument("--out", default="runs/demo", help="folder for the store and report")
    _progress(p)


def _add_import(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="import items, answers or labels (CSV or JSONL)")
    p.add_argument("kind", choices=["items", "answers", "labels"])
    p.add_argument("file")
    _store(p)


def _add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="ask every configured model every unanswered item")
    p.add_argument("config")
    _store(p, default=None)
    p.add_argument("--models", help="comma-separated model names from the config")
    p.add_argument("--limit", type=int, help="at most N items per model")
    _progress(p)


def _add_judge(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("judge", help="label every answer with the config's [judge] model")
    p.add_argument("config")
    _store(p, default=None)
    p.add_argument("--models", help="judge only these answering models")
    p.add_argument("--limit", type=int, help="at most N cells")
    _progress(p)


def _add_score(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("score", help="BLEU-2 and BERTScore-F1 for every unscored answer")
    _store(p)
    p.add_argument("--metric", action="append", choices=["bleu2", "bleu2_nltk", "bertscore"],
                   help="repeatable; default bleu2 and bertscore")
    p.add_argument("--bertscore-model",
                   help="model name or local directory (default roberta-large; "
                        "sentence-transformers/all-MiniLM-L6-v2 is the offline encoder)")
    p.add_argument("--bertscore-layers", type=int, help="layer to take embeddings from")
    p.add_argument("--baseline", help="a baseline file for rescaling (bert-score's CSV format)")
    p.add_argument("--no-rescale", action="store_true", help="raw F1, no baseline rescaling")
    p.add_argument("--device", help="cpu, cuda, cuda:1 ... (default cuda when available)")
    p.add_argument("--batch-size", type=int,
                   help="BERTScore batch size (default 64 on CPU, 256 on CUDA)")
    _progress(p)


def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="tables, statistics and figures from a store")
    _store(p)
    p.add_argument("--out", help="folder for report.json/md/html and figures (default: <store>_report/ "
                                 "beside the store; with --format alone nothing is written)")
    p.add_argument("--format", choices=["json", "md", "html"],
                   help="print this one format to stdout instead of writing a folder")
    p.add_argument("--contrast", default="official,fan",
                   help="documented,undocumented subsets (default official,fan)")
    p.add_argument("--judge", help="judge rater, e.g. judge:claude-sonnet-5")
    p.add_argument("--human", help="human rater (default: human, else the first human:<name>)")


def _add_sql(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sql", help="run a read-only SQL query on the store")
    _store(p)
    p.add_argument("query")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")


def _add_emulator(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("emulator", help="loopback server speaking all four provider APIs")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--latency-ms", type=float, default=0.0)
    p.add_argument("--rpm", type=float, help="enforced requests-per-minute limit")
    p.add_argument("--faults", default="", help="e.g. 500=0.05,529=0.02,reset=0.01,malformed=0.01,hang=0.01")
    p.add_argument("--served-model", help="answer as this model instead of the requested one")
    p.add_argument("--quota-per-day", type=int,
                   help="requests per (API, model) before the day's quota runs out")
    p.add_argument("--jitter-ms", type=float, default=0.0, help="latency varies by +/- this much")
    p.add_argument("--seed", type=int, help="seed for fault draws and jitter (reproducible runs)")


def _add_bench(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="throughput benchmark against providers or the emulator")
    p.add_argument("config", nargs="?", help="run config whose [[models]] are benchmarked")
    p.add_argument("--emulator", action="store_true",
                   help="benchmark all four protocols against an emulator (a child process), "
                        "with a bare httpx loop as the floor")
    p.add_argument("--requests", type=int, help="probe requests per model (default 256)")
    p.add_argument("--concurrency", type=int,
                   help="in flight per model (default: the config's; 32 with --emulator)")
    p.add_argument("--latency-ms", type=float, help="emulator latency (default 1000)")
    p.add_argument("--rpm", type=float, help="emulator RPM limit (also the models' limit unless "
                                             "--model-rpm); skips the bare-loop floor")
    p.add_argument("--model-rpm", type=float,
                   help="RPM limit the emulator's models are configured with (e.g. 2 x --rpm)")
    p.add_argument("--models", help="comma-separated model names from the config")
    p.add_argument("--no-floor", action="store_true", help="skip the bare httpx loop")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.add_argument("--store", help="bench store (default: a temporary file)")
    _progress(p)


_BUILDERS: list[Callable[[argparse._SubParsersAction], None]] = [
    _add_demo, _add_import, _add_run, _add_judge, _add_score, _add_report, _add_sql,
    _add_emulator, _add_bench,
]


# One example per command, shown under its --help.
EXAMPLES = {
    "demo": "contam demo                     # bundled items, local model, scores, report in runs/demo",
    "import": "contam import items items.csv --store runs/paper.duckdb",
    "run": "contam run examples/study.toml --models gpt-5.6-sol --limit 10 -v",
    "judge": "contam judge examples/study.toml --store runs/paper.duckdb",
    "score": "contam score --store runs/paper.duckdb --metric bleu2",
    "report": "contam report --store runs/paper.duckdb --out runs/report",
    "sql": 'contam sql --store runs/paper.duckdb "select model, avg(bleu2) from cells group by model"',
    "emulator": "contam emulator --latency-ms 300 --faults 500=0.03,529=0.02 &",
    "bench": "contam bench --emulator --requests 256",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="contam", description="Measure how much of a language model's benchmark score is "
        "memorised text.", epilog="example:\n  scripts/setup && .venv/bin/contam demo",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"contam {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in _BUILDERS:
        add(sub)
    for name, command in sub.choices.items():
        command.epilog = f"example:\n  {EXAMPLES[name]}"
        command.formatter_class = argparse.RawDescriptionHelpFormatter
        command.add_argument("-v", "--verbose", action="count", default=0,
                             help="log what happens on stderr (-vv: more); every run and judge "
                                  "pass also logs to a file beside the store")
    return parser


def _handler(command: str) -> Callable[[argparse.Namespace], int]:
    module_name, function_name = HANDLERS[command].split(":")
    return getattr(importlib.import_module(module_name), function_name)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(args.verbose)
    try:
        return int(_handler(args.command)(args) or 0)
    except UserError as exc:
        print(f"contam {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"contam {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
