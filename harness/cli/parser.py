"""`contam`'s command line: each subcommand's arguments, its example, and the parser that reads
them. A bad argument is one line naming it (:class:`OneLineParser`); `-v` goes before or after
the subcommand (:func:`parse_args`)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

from contam.harness import __version__
from contam.harness.cli.flags import add_flag, add_options
from contam.harness.declare import Flag
from contam.harness.emulator.options import EmulatorOptions
from contam.harness.jobs.options.bench import BenchOptions
from contam.harness.jobs.options.cost import CostOptions
from contam.harness.jobs.options.demo import DemoOptions
from contam.harness.jobs.options.init import InitOptions
from contam.harness.jobs.options.lane import JudgeOptions, ProbeOptions, RunOptions
from contam.harness.jobs.options.plant import PlantOptions
from contam.harness.jobs.options.report import ReportOptions
from contam.harness.jobs.options.score import ScoreOptions
from contam.harness.jobs.options.store import store_flag
from contam.harness.jobs.options.store_tools import BatchesOptions, ImportOptions, SqlOptions
from contam.harness.jobs.options.view import ViewOptions
from contam.harness.text import visible

__all__ = ["build_parser", "parse_args", "OneLineParser", "COMMANDS", "Command", "EXAMPLES",
           "TOP_DOCS", "DESCRIPTION", "CONFIG", "VERBOSE_HELP", "VERSION_HELP", "epilog"]


@dataclass(frozen=True)
class Command:
    """A subcommand: its one-line help, its example and docs page (the help's last lines), the
    arguments the command line has beside the options (positionals, ``--store``) before and
    after them, and its options class, whose fields are its flags."""

    name: str
    help: str
    example: str
    docs: str
    options: type | None = None
    before: tuple[Flag, ...] = ()
    after: tuple[Flag, ...] = ()
    description: str | None = None


CONFIG = Flag("config", help="the study's config file (TOML: its [[models]], items and store)")

COMMANDS = (
    Command("demo", "bundled items -> local model -> scores -> report, offline",
            "contam demo                     # bundled items, local model, scores, report in runs/demo",
            "docs/tutorials/first-study.md", DemoOptions),
    Command("init", "start a study folder: study.toml (every key, commented) and its JSON Schema, "
                    "items.csv (header and two rows) or your own items file, README (the next "
                    "commands)",
            "contam init my-study                 # then: cd my-study, and see its README.md",
            "docs/how-to/start-a-study.md", InitOptions,
            before=(Flag("folder", help="the study's folder (made if absent; nothing in it is "
                                        "overwritten)"),)),
    Command("import", "import items, answers or labels (CSV, JSONL or Parquet)",
            "contam import items items.csv --store runs/paper.duckdb", "docs/how-to/items.md",
            ImportOptions, before=(Flag("kind", choices=("items", "answers", "labels"),
                                        help="what the file holds"),
                                   Flag("file", help="a .csv, .jsonl or .parquet file")),
            after=(store_flag(),)),
    Command("run", "ask every configured model every unanswered item",
            "contam run examples/study.toml --models gpt-5.6-sol --limit 10 -v",
            "docs/how-to/providers.md", RunOptions, before=(CONFIG, store_flag(None))),
    Command("probe", "a contamination probe (cdd ...) on every configured model",
            "contam probe cdd examples/study.toml --samples 20 --limit 50", "docs/how-to/probes.md"),
    Command("batches", "list the store's batch jobs, or cancel one",
            "contam batches --store runs/paper.duckdb", "docs/how-to/batch-apis.md", BatchesOptions,
            before=(Flag("action", nargs="?", choices=("list", "cancel"), cli_default="list",
                         help="list the jobs (default), or cancel the one named"),
                    Flag("job_id", nargs="?", help="the job to cancel"), store_flag())),
    Command("cost", "what the store's answers cost, synchronous vs batch, at given prices",
            'contam cost --store runs/paper.duckdb --price "*=2.50,10.00" --items 400',
            "docs/how-to/batch-apis.md", CostOptions, before=(store_flag(),)),
    Command("judge", "label every answer with the config's [judge] model",
            "contam judge examples/study.toml --store runs/paper.duckdb", "docs/how-to/raters.md",
            JudgeOptions, before=(CONFIG, store_flag(None))),
    Command("score", "BLEU-2, BERTScore-F1 and rule metrics for every unscored answer",
            "contam score --store runs/paper.duckdb --metric bleu2", "docs/how-to/scoring.md",
            ScoreOptions, before=(store_flag(),)),
    Command("report", "tables, statistics and figures from a store",
            "contam report --store runs/paper.duckdb --out runs/report", "docs/how-to/report.md",
            ReportOptions, before=(store_flag(),)),
    Command("sql", "run a read-only SQL query on the store",
            'contam sql --store runs/paper.duckdb "select model, avg(bleu2) from cells group by model"',
            "docs/how-to/reading-a-store.md", SqlOptions,
            before=(store_flag(), Flag("query", help="one read-only SQL statement, e.g. over the "
                                                     "cells view")),
            description="Run one read-only SQL query on the store. While a job holds the store, "
                        "the query goes through that job, which stops it after 120 s (or when "
                        "this command goes away) and refuses a result over 2,000,000 rows or "
                        "128 MiB; once the job has finished, no such limit applies."),
    Command("emulator", "loopback server speaking all four provider APIs",
            "contam emulator --latency-ms 300 --faults 500=0.03,529=0.02 &",
            "docs/how-to/benchmarking.md", EmulatorOptions),
    Command("bench", "throughput benchmark against providers or the emulator",
            "contam bench --emulator --requests 256", "docs/how-to/benchmarking.md", BenchOptions),
    Command("view", "browse and label the answers in a web browser",
            "contam view --store runs/paper.duckdb --raters alice,bob --overlap 0.2",
            "docs/how-to/raters.md", ViewOptions, before=(store_flag(),)),
    Command("plant", "fine-tune a local model on a seeded share of the items (known "
                     "contamination, to check the probes)",
            "contam plant examples/planted/planted.toml --model base --epochs 1,3 --as demo",
            "docs/how-to/planting.md", PlantOptions, before=(CONFIG, store_flag(None))),
)
# One example per command, shown under its --help.
EXAMPLES = {command.name: command.example for command in COMMANDS}
TOP_DOCS = "docs/index.md"
DESCRIPTION = "Measure how much of a language model's benchmark score is memorised text."
VERBOSE_HELP = ("log what happens on stderr (-vv: more); every run and judge pass also logs to a "
                "file beside the store")
VERSION_HELP = "show program's version number and exit"


def _add_command(sub: argparse._SubParsersAction, command: Command) -> argparse.ArgumentParser:
    parser = sub.add_parser(command.name, help=command.help, description=command.description,
                            epilog=epilog(command.example, command.docs),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag in command.before:
        add_flag(parser, flag)
    if command.options is not None:
        add_options(parser, command.options)
    for flag in command.after:
        add_flag(parser, flag)
    return parser


def epilog(example: str, docs: str) -> str:
    """A help's last lines: an example, then the docs page that covers the command."""
    return f"example:\n  {example}\n\ndocs: {docs}"


def _add_probe_kinds(probe: argparse.ArgumentParser, docs: str) -> None:
    """One subcommand per registered probe: a lane job's arguments, then the probe's own options
    (unset: None, so the job takes the spec's default)."""
    from contam.metrics.probe_registry import PROBES

    kinds = probe.add_subparsers(dest="kind", required=True, metavar="KIND")
    for kind, spec in PROBES.items():
        k = kinds.add_parser(kind, help=spec.summary.replace("%", "%%"), epilog=f"docs: {docs}")
        for flag in (CONFIG, store_flag(None)):
            add_flag(k, flag)
        add_options(k, ProbeOptions, skip=() if spec.batchable else ("batch",))
        _verbose(k, dest="verbose_kind")  # `contam probe cdd ... -v`
        for option in spec.options:
            k.add_argument(option.flag, dest=f"param_{option.name}", type=option.type,
                           metavar=option.name.upper(), help=option.help.replace("%", "%%"))


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line naming it and the cause, exit 2
    (``contam run: --limit: invalid int value: 'abc'``) rather than the usage block (``--help``
    shows that). Subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        message = re.sub(r"^argument ([^:]+): ", r"\1: ", message)
        self.exit(2, visible(f"{self.prog}: {message}", keep_newlines=False) + "\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="contam", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=epilog("scripts/setup && .venv/bin/contam demo", TOP_DOCS))
    parser.add_argument("--version", action="version", version=f"contam {__version__}",
                        help=VERSION_HELP)
    _verbose(parser, dest="verbose_before")  # `contam -v run ...`; main adds the two counts
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        added = _add_command(sub, command)
        if command.name == "probe":
            _add_probe_kinds(added, command.docs)
        _verbose(added, dest="verbose")  # `contam run ... -v`
    return parser


def _verbose(parser: argparse.ArgumentParser, dest: str) -> None:
    """-v goes before the subcommand or after it (and, for a probe, after its kind too). A
    destination per level, because a subcommand's default would overwrite the count the level
    above took."""
    parser.add_argument("-v", "--verbose", action="count", default=0, dest=dest, help=VERBOSE_HELP)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The parsed command line, with one ``verbose``: the -v counts before and after the command
    (and after a probe's kind)."""
    args = build_parser().parse_args(argv)
    args.verbose += vars(args).pop("verbose_before") + vars(args).pop("verbose_kind", 0)
    return args
