"""What each `contam` subcommand does with its parsed arguments: build the job's typed options,
call the job (imported only then, so `contam sql` never pays for torch) and print its result;
each returns the exit status."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from contam.harness.cli.output import print_result, say, terminal_width
from contam.harness.declare import from_args
from contam.harness.emulator.options import EmulatorOptions
from contam.harness.errors import UserError
from contam.harness.jobs.options.bench import BenchOptions
from contam.harness.jobs.options.cost import CostOptions
from contam.harness.jobs.options.demo import DemoOptions
from contam.harness.jobs.options.init import InitOptions
from contam.harness.jobs.options.lane import JudgeOptions, ProbeOptions, RunOptions
from contam.harness.jobs.options.plant import PlantOptions
from contam.harness.jobs.options.report import ReportOptions
from contam.harness.jobs.options.score import ScoreOptions
from contam.harness.jobs.options.store_tools import BatchesOptions, ImportOptions, SqlOptions
from contam.harness.jobs.options.view import ViewOptions

__all__ = ["HANDLERS", "emulator_settings_from_args"]


def _import(args: argparse.Namespace) -> int:
    from contam.harness.jobs.importing import import_path

    options = from_args(ImportOptions, args)
    say(import_path(args.kind, args.file, store=args.store, **asdict(options)).summary())
    return 0


def _run(args: argparse.Namespace) -> int:
    from contam.harness.jobs.run import run

    return print_result(run(args.config, store=args.store, options=from_args(RunOptions, args)))


def _probe(args: argparse.Namespace) -> int:
    from contam.harness.jobs.probe import probe

    parameters = {name.removeprefix("param_"): value for name, value in vars(args).items()
                  if name.startswith("param_") and value is not None}
    options = from_args(ProbeOptions, args, parameters=parameters)
    return print_result(probe(args.kind, args.config, store=args.store, options=options))


def _batches(args: argparse.Namespace) -> int:
    from contam.harness.jobs.batches import cancel_batch, list_batches

    if args.action == "cancel" and not args.job_id:
        raise UserError("contam batches cancel needs a job id (see `contam batches`)")
    if args.action == "list" and args.job_id:
        raise UserError(f"unexpected argument {args.job_id!r}; did you mean "
                        f"`contam batches cancel {args.job_id}`?")
    if args.action == "cancel":
        say(cancel_batch(args.job_id, store=args.store).line())
    else:
        options = from_args(BatchesOptions, args)
        for line in list_batches(store=args.store, **asdict(options)).lines():
            say(line)
    return 0


def _cost(args: argparse.Namespace) -> int:
    from contam.harness.jobs.cost import cost

    for line in cost(store=args.store, options=from_args(CostOptions, args)).lines():
        say(line)
    return 0


def _judge(args: argparse.Namespace) -> int:
    from contam.harness.jobs.judge import judge

    return print_result(judge(args.config, store=args.store, options=from_args(JudgeOptions, args)))


def _score(args: argparse.Namespace) -> int:
    from contam.harness.jobs.score import score

    summaries = score(store=args.store, options=from_args(ScoreOptions, args))
    for summary in summaries:
        if summary.error is None:
            say(summary.line())
    failed = [s.error for s in summaries if s.error is not None]
    if failed:  # raised after every metric that could run has run and been stored
        raise UserError(failed[0])
    return 0


def _report(args: argparse.Namespace) -> int:
    from contam.harness.jobs.report import report

    result = report(store=args.store, options=from_args(ReportOptions, args))
    if result.out is not None:
        say(f"wrote {len(result.written)} files to {result.out}/",
             sys.stderr if args.format else sys.stdout)
    if result.text is not None:
        sys.stdout.write(result.text)
    return 0


def _sql(args: argparse.Namespace) -> int:
    from contam.harness.jobs.sql import print_sql

    shown = from_args(SqlOptions, args)
    try:
        printed = print_sql(args.query, sys.stdout, store=args.store, options=shown,
                            width=terminal_width(sys.stdout))
        sys.stdout.flush()  # the table whole before the footer, wherever both streams go
    except BrokenPipeError:  # `| head`: the reader has all it wanted; quiet, as a C tool would be
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush
        return 128 + signal.SIGPIPE
    if shown.format == "table":
        print(printed.footer(), file=sys.stderr)
    return 0


def emulator_settings_from_args(args: argparse.Namespace) -> Any:
    from contam.harness.emulator.command import emulator_settings

    return emulator_settings(from_args(EmulatorOptions, args))


def _emulator(args: argparse.Namespace) -> int:
    from contam.harness.emulator.command import banner, emulator_settings, serve_until_signal

    options = from_args(EmulatorOptions, args)
    settings = emulator_settings(options)
    serve_until_signal(settings, options.host, options.port,
                       on_ready=lambda url: print(banner(url, settings), flush=True))
    return 0


def _bench(args: argparse.Namespace) -> int:
    from contam.harness.jobs.bench import bench
    from contam.harness.jobs.bench_output import print_report

    options = from_args(BenchOptions, args)
    result = bench(options)
    print_report(result.report, options.format)
    return result.exit_status


def _view(args: argparse.Namespace) -> int:
    from contam.harness.view import serve

    options = from_args(ViewOptions, args, store=Path(args.store))
    serve(options, on_ready=lambda url: print(f"contam view: {url}", flush=True),
          new_token=options.new_token)
    return 0


def _init(args: argparse.Namespace) -> int:
    from contam.harness.jobs.init import init_study

    say(init_study(args.folder, **asdict(from_args(InitOptions, args))).summary())
    return 0


def _demo(args: argparse.Namespace) -> int:
    from contam.harness.jobs.demo import demo

    return demo(**asdict(from_args(DemoOptions, args)))


def _plant(args: argparse.Namespace) -> int:
    from contam.harness.jobs.plant import plant

    options = from_args(PlantOptions, args)
    for line in plant(args.config, store=args.store, options=options).lines:
        say(line)
    return 0


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": _demo, "init": _init, "import": _import, "run": _run, "probe": _probe, "batches": _batches,
    "cost": _cost,
    "judge": _judge, "score": _score, "report": _report, "sql": _sql, "emulator": _emulator,
    "bench": _bench, "view": _view, "plant": _plant,
}
