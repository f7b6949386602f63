"""What each `contam` subcommand does with its parsed arguments: build the job's typed options,
call the job (imported only then, so `contam sql` never pays for torch) and print its result;
each returns the exit status."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from harness.cli.output import print_result, say, terminal_width
from harness.errors import UserError

__all__ = ["HANDLERS", "emulator_settings_from_args"]


def _import(args: argparse.Namespace) -> int:
    from harness.jobs.importing import import_path

    say(import_path(args.kind, args.file, store=args.store, column_map=args.column_map).summary())
    return 0


def _job_options(args: argparse.Namespace) -> Any:
    from harness.config import model_names
    from harness.jobs.lane_job import JobOptions

    return JobOptions(limit=args.limit, no_progress=args.no_progress, models=model_names(args.models))


def _run(args: argparse.Namespace) -> int:
    from harness.jobs.run import RunOptions, batch_options, run

    batch = batch_options(poll_max_s=args.batch_poll_max, fallback=args.batch_fallback)
    options = RunOptions(**vars(_job_options(args)), batch=args.batch, batch_options=batch)
    return print_result(run(args.config, store=args.store, options=options))


def _probe(args: argparse.Namespace) -> int:
    from harness.jobs.probe import ProbeOptions, probe

    parameters = {name.removeprefix("param_"): value for name, value in vars(args).items()
                  if name.startswith("param_") and value is not None}
    options = ProbeOptions(**vars(_job_options(args)), batch=getattr(args, "batch", False),
                           parameters=parameters)
    return print_result(probe(args.kind, args.config, store=args.store, options=options))


def _batches(args: argparse.Namespace) -> int:
    from harness.jobs.batches import cancel_batch, list_batches

    if args.action == "cancel" and not args.job_id:
        raise UserError("contam batches cancel needs a job id (see `contam batches`)")
    if args.action == "list" and args.job_id:
        raise UserError(f"unexpected argument {args.job_id!r}; did you mean "
                        f"`contam batches cancel {args.job_id}`?")
    if args.action == "cancel":
        say(cancel_batch(args.job_id, store=args.store).line())
    else:
        for line in list_batches(store=args.store, provider_jobs=args.provider_jobs).lines():
            say(line)
    return 0


def _cost(args: argparse.Namespace) -> int:
    from harness.jobs.cost import CostOptions, cost, parse_price

    prices = {model: (i, o) for model, i, o in map(parse_price, args.price or [])}
    options = CostOptions(prices=prices, batch_discount=args.batch_discount, items=args.items)
    for line in cost(store=args.store, options=options).lines():
        say(line)
    return 0


def _judge(args: argparse.Namespace) -> int:
    from harness.jobs.judge import judge

    return print_result(judge(args.config, store=args.store, options=_job_options(args)))


def _score(args: argparse.Namespace) -> int:
    from harness.jobs.score import ScoreOptions, score
    from harness.jobs.score_ray import RayOptions

    options = ScoreOptions(
        metrics=args.metric, config=args.config, bertscore_model=args.bertscore_model,
        layer=args.bertscore_layers, rescale=not args.no_rescale, baseline=args.baseline,
        device=args.device, precision=args.precision, token_budget=args.token_budget,
        idf=args.idf, ray=RayOptions(address=args.ray) if args.ray else None,
        progress=not args.no_progress and sys.stderr.isatty())
    summaries = score(store=args.store, options=options)
    for summary in summaries:
        if summary.error is None:
            say(summary.line())
    failed = [s.error for s in summaries if s.error is not None]
    if failed:  # raised after every metric that could run has run and been stored
        raise UserError(failed[0])
    return 0


def _report(args: argparse.Namespace) -> int:
    from harness.jobs.report import report

    result = report(store=args.store, out=args.out, format=args.format, contrast=args.contrast,
                    human=args.human, judge=args.judge, figure_titles=args.figure_titles,
                    config=args.config, by=args.by, correct=args.correct)
    if result.out is not None:
        say(f"wrote {len(result.written)} files to {result.out}/",
             sys.stderr if args.format else sys.stdout)
    if result.text is not None:
        sys.stdout.write(result.text)
    return 0


def _sql(args: argparse.Namespace) -> int:
    from harness.jobs.sql import sql

    result = sql(args.query, store=args.store)
    sys.stdout.write(result.text(args.format, width=terminal_width(sys.stdout)))
    sys.stdout.flush()  # the table whole before the footer, wherever both streams go
    if args.format == "table":
        print(result.count_line(), file=sys.stderr)
    return 0


def emulator_settings_from_args(args: argparse.Namespace) -> Any:
    from harness.emulator.command import emulator_settings

    return emulator_settings(latency_ms=args.latency_ms, jitter_ms=args.jitter_ms or 0.0,
                             rpm=args.rpm, faults=args.faults or "", served_model=args.served_model,
                             quota_per_day=args.quota_per_day, seed=args.seed, slots=args.slots,
                             batch_processing_s=args.batch_processing_s,
                             batch_fail_rate=args.batch_fail_rate,
                             batch_expire_rate=args.batch_expire_rate,
                             items=args.items, profile=args.profile,
                             documented=args.documented, exposure=args.exposure)


def _emulator(args: argparse.Namespace) -> int:
    from harness.emulator.command import banner, serve_until_signal

    settings = emulator_settings_from_args(args)
    serve_until_signal(settings, args.host, args.port,
                       on_ready=lambda url: print(banner(url, settings), flush=True))
    return 0


def _bench(args: argparse.Namespace) -> int:
    from dataclasses import fields

    from harness.config import model_names
    from harness.jobs.bench import BenchOptions, bench
    from harness.jobs.bench_output import print_report

    flags = {f.name: getattr(args, f.name) for f in fields(BenchOptions)}
    result = bench(BenchOptions(**{**flags, "models": model_names(args.models)}))
    print_report(result.report, args.format)
    return result.exit_status


def _view(args: argparse.Namespace) -> int:
    from harness.view import serve, view_options

    options = view_options(store=args.store, host=args.host, port=args.port, unblind=args.unblind,
                           overlap=args.overlap, raters=args.raters, seed=args.seed)
    serve(options, on_ready=lambda url: print(f"contam view: {url}", flush=True),
          new_token=args.new_token)
    return 0


def _init(args: argparse.Namespace) -> int:
    from harness.jobs.init import init_study

    say(init_study(args.folder).summary())
    return 0


def _demo(args: argparse.Namespace) -> int:
    from harness.jobs.demo import demo

    return demo(args.out, no_progress=args.no_progress, probes=args.probes)


def _plant(args: argparse.Namespace) -> int:
    from harness.jobs.plant import PlantOptions, plant

    try:
        epochs = tuple(int(part) for part in args.epochs.split(","))
    except ValueError:
        raise UserError(f"contam plant: --epochs must be whole numbers, not {args.epochs!r}") from None
    options = PlantOptions(model=args.model, name=args.name, share=args.share, epochs=epochs,
                           format=args.format, seed=args.seed, device=args.device,
                           learning_rate=args.lr, batch_size=args.batch_size,
                           max_length=args.max_length,
                           progress=not args.no_progress and sys.stderr.isatty())
    for line in plant(args.config, store=args.store, options=options).lines:
        say(line)
    return 0


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": _demo, "init": _init, "import": _import, "run": _run, "probe": _probe, "batches": _batches,
    "cost": _cost,
    "judge": _judge, "score": _score, "report": _report, "sql": _sql, "emulator": _emulator,
    "bench": _bench, "view": _view, "plant": _plant,
}
