"""`contam`'s command line: each subcommand's arguments, its example, and the parser that reads
them. A bad argument is one line naming it (:class:`OneLineParser`); `-v` goes before or after
the subcommand (:func:`parse_args`)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from typing import NoReturn

from harness import __version__
from harness.emulator.skill import EXPOSURE_HELP, SKILL_HELP  # text only: no server imported
from harness.store import DEFAULT_STORE  # the path alone: DuckDB is imported when a store opens
from harness.text import visible

__all__ = ["build_parser", "parse_args", "OneLineParser", "EXAMPLES"]


def _store(parser: argparse.ArgumentParser, default: str | None = DEFAULT_STORE) -> None:
    parser.add_argument("--store", default=default, help=f"DuckDB store (default {DEFAULT_STORE})")


def _progress(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-progress", action="store_true",
                        help="plain periodic log lines instead of the live display")


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="bundled items -> local model -> scores -> report, offline")
    p.add_argument("--out", default="runs/demo", help="folder for the store and report")
    p.add_argument("--probes", action="store_true",
                   help="also every contamination probe on a contaminated and a clean emulated "
                        "model that know the demo items (in-process emulators)")
    _progress(p)


def _add_import(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="import items, answers or labels (CSV, JSONL or Parquet)")
    p.add_argument("kind", choices=["items", "answers", "labels"])
    p.add_argument("file", help="a .csv, .jsonl or .parquet file")
    p.add_argument("--map", dest="column_map", metavar="CONTAM=FILE[,...]",
                   help="the file's column names onto contam's, e.g. "
                        "item_id=id,question=prompt,reference=answer,subset=tier")
    _store(p)


def _add_lane_job(sub: argparse._SubParsersAction, name: str, help: str, models: str,
                  limit: str) -> argparse.ArgumentParser:
    """run and judge take the same arguments: a config, a store, models, a limit, progress."""
    p = sub.add_parser(name, help=help)
    p.add_argument("config")
    _store(p, default=None)
    p.add_argument("--models", help=models)
    p.add_argument("--limit", type=int, help=limit)
    _progress(p)
    return p


def _add_run(sub: argparse._SubParsersAction) -> None:
    p = _add_lane_job(sub, "run", "ask every configured model every unanswered item",
                      "comma-separated model names from the config", "at most N items per model")
    p.add_argument("--batch", action="store_true",
                   help="openai, anthropic and gemini models go as batch jobs (about half price)")
    p.add_argument("--batch-fallback", choices=["followup", "sync"], default="followup",
                   help="failed or expired batch requests: a follow-up job (default) or the "
                        "synchronous path")
    p.add_argument("--batch-poll-max", type=float,
                   help="longest wait between two polls of a batch job, seconds (default 60)")


def _add_probe(sub: argparse._SubParsersAction) -> None:
    from metrics.probe_registry import PROBES

    p = sub.add_parser("probe", help="a contamination probe (cdd ...) on every configured model")
    kinds = p.add_subparsers(dest="kind", required=True, metavar="KIND")
    for kind, spec in PROBES.items():  # one subcommand per registered probe, its options as flags
        k = _add_lane_job(kinds, kind, spec.summary.replace("%", "%%"),
                          "comma-separated model names from the config", "the first N items")
        if spec.batchable:
            k.add_argument("--batch", action="store_true", help="openai, anthropic and gemini "
                           "models go as batch jobs (about half price)")
        _verbose(k, dest="verbose_kind")  # `contam probe cdd ... -v`
        for option in spec.options:  # unset: None, so the job takes the spec's default
            k.add_argument(option.flag, dest=f"param_{option.name}", type=option.type,
                           metavar=option.name.upper(), help=option.help.replace("%", "%%"))


def _add_batches(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("batches", help="list the store's batch jobs, or cancel one")
    p.add_argument("action", nargs="?", choices=["list", "cancel"], default="list")
    p.add_argument("job_id", nargs="?", help="the job to cancel")
    _store(p)
    p.add_argument("--provider-jobs", action="store_true",
                   help="also list the providers' jobs tagged by contam that the store lacks "
                        "(a job created in the instant before a kill)")


def _add_cost(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cost", help="what the store's answers cost, synchronous vs batch, at given prices")
    _store(p)
    p.add_argument("--price", action="append", metavar="MODEL=IN,OUT",
                   help="price per million input and output tokens; repeatable; MODEL * for all")
    p.add_argument("--batch-discount", type=float, default=0.5,
                   help="batch price as a fraction of the synchronous one (default 0.5)")
    p.add_argument("--items", type=int,
                   help="scale each model to N items (the paper: 400 items x 4 models = 1,600 cells)")


def _add_judge(sub: argparse._SubParsersAction) -> None:
    _add_lane_job(sub, "judge", "label every answer with the config's [judge] model",
                  "judge only these answering models", "at most N cells")


def _metric_help() -> str:
    """``--metric``'s help, from the metric registry: each metric's --metric name (and its stored
    name where that differs), then the defaults."""
    from metrics.metric_registry import DEFAULT_METRICS, METRICS

    names = [spec.choice + (f" (or {spec.name})" if spec.flag else "") for spec in METRICS.values()]
    defaults = " and ".join(METRICS[name].choice for name in DEFAULT_METRICS)
    return (f"{', '.join(names)}; repeatable or a comma list (default: the study's [scoring] "
            f"metrics, else {defaults})")


def _add_score(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("score", help="BLEU-2, BERTScore-F1 and rule metrics for every unscored answer")
    _store(p)
    p.add_argument("--metric", action="append", metavar="NAME[,NAME]", help=_metric_help())
    p.add_argument("--config", help="the study config whose [scoring] metrics, numeric_tolerance "
                                    "and regex apply (default: what the newest contam run recorded)")
    p.add_argument("--bertscore-model",
                   help="model name or local directory (default roberta-large; "
                        "sentence-transformers/all-MiniLM-L6-v2 is the offline encoder)")
    p.add_argument("--bertscore-layers", type=int, help="layer to take embeddings from")
    p.add_argument("--baseline", help="a baseline file for rescaling (bert-score's CSV format)")
    p.add_argument("--no-rescale", action="store_true", help="raw F1, no baseline rescaling")
    p.add_argument("--device", help="cpu; cuda = every visible GPU; cuda:1 = that one "
                                    "(default: every GPU when there is one, else cpu)")
    p.add_argument("--precision", choices=["fp32", "tf32", "bf16"],
                   help="BERTScore arithmetic (default tf32 on CUDA, fp32 on CPU; "
                        "fp32 = bert-score to 1e-6)")
    p.add_argument("--token-budget", type=int,
                   help="tokens per encoder batch, padding included "
                        "(default 2048 on CPU, 65536 on CUDA)")
    p.add_argument("--idf", action="store_true",
                   help="weigh BERTScore's tokens by idf over the answered items' references, "
                        "as bert-score's idf=True (default: off)")
    p.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                   help="score BERTScore on a Ray cluster: no value for a local Ray, 'auto' for "
                        "the cluster this node joined, or ray://host:10001 (pip install "
                        "'contam[ray]')")
    _progress(p)


def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="tables, statistics and figures from a store")
    _store(p)
    p.add_argument("--out", help="folder for report.json/md/html and figures (default: <store>_report/ "
                                 "beside the store; with --format alone nothing is written)")
    p.add_argument("--format", choices=["json", "md", "html"],
                   help="print this one format to stdout instead of writing a folder")
    p.add_argument("--contrast", help="documented,undocumented subsets (default: the first and last "
                                      "of the study's [study] subsets, else official,fan)")
    p.add_argument("--judge", help="judge rater, e.g. judge:claude-sonnet-5")
    p.add_argument("--human", help="human rater (default: the one that labelled the most cells)")
    p.add_argument("--correct", metavar="OUTCOME",
                   help="what makes an answer correct: labels, a rule metric (exact, contains, ...) "
                        "or a graded one with a threshold ('bleu2 >= 0.5') (default: the study's "
                        "[study] correct, else labels where the store has them, else the first "
                        "rule metric of [scoring] metrics)")
    p.add_argument("--by", metavar="COLUMN",
                   help="break accuracy down by an item column: title, subset, ... or one of the "
                        "items' own extra columns")
    p.add_argument("--figure-titles", action="store_true",
                   help="draw each figure's title inside it (default: none; the captions carry them)")
    p.add_argument("--config", help="the study's config: its [study] exposure, released, subsets and "
                                    "[[models]] cutoff (default: what the newest contam run recorded)")


def _add_sql(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sql", help="run a read-only SQL query on the store",
                       description="Run one read-only SQL query on the store. While a job holds "
                       "the store, the query goes through that job, which stops it after 120 s "
                       "(or when this command goes away) and refuses a result over 2,000,000 "
                       "rows or 128 MiB; once the job has finished, no such limit applies.")
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
    p.add_argument("--slots", type=int,
                   help="requests worked on at once, the rest queue (a served model's batch size)")
    p.add_argument("--batch-processing-s", type=float, default=0.0,
                   help="seconds a batch job takes before its results are ready")
    p.add_argument("--batch-fail-rate", type=float, default=0.0,
                   help="probability that a batch line fails with a 500")
    p.add_argument("--batch-expire-rate", type=float, default=0.0,
                   help="probability that a batch line expires unprocessed")
    p.add_argument("--items", help="an items file (CSV or JSONL, extra columns allowed): answer "
                                   "like a model that knows it (the reference for most documented "
                                   f"items); {SKILL_HELP}")
    p.add_argument("--profile", choices=["contaminated", "clean"], default="contaminated",
                   help="with --items: contaminated shows memorisation signals on documented "
                        "items (default), clean none")
    known = p.add_mutually_exclusive_group()
    known.add_argument("--documented", metavar="SUBSET[,SUBSET]",
                       help="with --items: the subsets the emulated models know well "
                            "(default: official)")
    known.add_argument("--exposure", metavar="COLUMN", help=EXPOSURE_HELP)


def _add_init(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="start a study folder: study.toml (every key, commented), "
                                    "items.csv (header and two rows), README (the next commands)")
    p.add_argument("folder", help="the study's folder (made if absent; nothing in it is "
                                  "overwritten)")


def _add_view(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("view", help="browse and label the answers in a web browser")
    _store(p)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; any other address still needs "
                        "the token)")
    p.add_argument("--port", type=int, default=8780, help="TCP port (default 8780; 0 = any free one)")
    p.add_argument("--unblind", action="store_true",
                   help="show model, subset and scores while labelling (default: blind)")
    p.add_argument("--raters", help="split the cells among these raters, e.g. alice,bob "
                                    "(default: every rater labels every cell)")
    p.add_argument("--overlap", type=float,
                   help="with --raters: this fraction of each rater's cells also goes to the next "
                        "rater, for agreement (e.g. 0.2)")
    p.add_argument("--seed", type=int, help="seed of the cell order of raters who have none yet "
                                            "(default: a random one, recorded)")
    p.add_argument("--new-token", action="store_true",
                   help="replace the store's access token (kept in STORE.view-token, so that a "
                        "restart keeps every link): every link printed before stops working")


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


def _add_plant(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plant", help="fine-tune a local model on a seeded share of the items "
                                     "(known contamination, to check the probes)")
    p.add_argument("config")
    _store(p, default=None)
    p.add_argument("--model", required=True, help="the configured model to fine-tune "
                                                  "(provider = \"local\")")
    p.add_argument("--as", dest="name", required=True, metavar="NEW",
                   help="the planted model's name: use it as model = \"planted:NEW\" "
                        "(NEW-e1, NEW-e3, ... with several --epochs)")
    p.add_argument("--share", type=float, default=0.5, help="share of each subset's items "
                                                            "planted (default 0.5)")
    p.add_argument("--epochs", default="3", help="epochs, or a list (1,3,10) for one model per "
                                                 "dose (default 3)")
    p.add_argument("--format", choices=["text", "qa"], default="text",
                   help="text: the min-k text (pre-training style); qa: question and reference "
                        "in the chat template (default text)")
    p.add_argument("--seed", type=int, default=0, help="draws the items and seeds training (default 0)")
    p.add_argument("--device", default="cpu", help="cpu (fp32, default) or cuda (bf16)")
    p.add_argument("--lr", type=float, default=1e-4, help="AdamW's constant learning rate (default 1e-4)")
    p.add_argument("--batch-size", type=int, default=4, help="sequences per step (default 4)")
    p.add_argument("--max-length", type=int, default=256, help="tokens kept of each sequence (default 256)")
    _progress(p)


_BUILDERS: list[Callable[[argparse._SubParsersAction], None]] = [
    _add_demo, _add_init, _add_import, _add_run, _add_probe, _add_batches, _add_cost, _add_judge, _add_score,
    _add_report, _add_sql, _add_emulator, _add_bench, _add_view, _add_plant,
]


# One example per command, shown under its --help.
EXAMPLES = {
    "demo": "contam demo                     # bundled items, local model, scores, report in runs/demo",
    "init": "contam init my-study                 # then: cd my-study, and see its README.md",
    "import": "contam import items items.csv --store runs/paper.duckdb",
    "run": "contam run examples/study.toml --models gpt-5.6-sol --limit 10 -v",
    "judge": "contam judge examples/study.toml --store runs/paper.duckdb",
    "score": "contam score --store runs/paper.duckdb --metric bleu2",
    "report": "contam report --store runs/paper.duckdb --out runs/report",
    "sql": 'contam sql --store runs/paper.duckdb "select model, avg(bleu2) from cells group by model"',
    "emulator": "contam emulator --latency-ms 300 --faults 500=0.03,529=0.02 &",
    "bench": "contam bench --emulator --requests 256",
    "batches": "contam batches --store runs/paper.duckdb",
    "probe": "contam probe cdd examples/study.toml --samples 20 --limit 50",
    "cost": 'contam cost --store runs/paper.duckdb --price "*=2.50,10.00" --items 400',
    "view": "contam view --store runs/paper.duckdb --raters alice,bob --overlap 0.2",
    "plant": "contam plant examples/planted/planted.toml --model base --epochs 1,3 --as demo",
}


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line naming it and the cause, exit 2
    (``contam run: --limit: invalid int value: 'abc'``) rather than the usage block (``--help``
    shows that). Subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        message = re.sub(r"^argument ([^:]+): ", r"\1: ", message)
        self.exit(2, visible(f"{self.prog}: {message}", keep_newlines=False) + "\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="contam", description="Measure how much of a language model's benchmark score is "
        "memorised text.", epilog="example:\n  scripts/setup && .venv/bin/contam demo",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"contam {__version__}")
    _verbose(parser, dest="verbose_before")  # `contam -v run ...`; main adds the two counts
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in _BUILDERS:
        add(sub)
    for name, command in sub.choices.items():
        command.epilog = f"example:\n  {EXAMPLES[name]}"
        command.formatter_class = argparse.RawDescriptionHelpFormatter
        _verbose(command, dest="verbose")  # `contam run ... -v`
    return parser


def _verbose(parser: argparse.ArgumentParser, dest: str) -> None:
    """-v goes before the subcommand or after it (and, for a probe, after its kind too). A
    destination per level, because a subcommand's default would overwrite the count the level
    above took."""
    parser.add_argument("-v", "--verbose", action="count", default=0, dest=dest,
                        help="log what happens on stderr (-vv: more); every run and judge "
                             "pass also logs to a file beside the store")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The parsed command line, with one ``verbose``: the -v counts before and after the command
    (and after a probe's kind)."""
    args = build_parser().parse_args(argv)
    args.verbose += vars(args).pop("verbose_before") + vars(args).pop("verbose_kind", 0)
    return args
