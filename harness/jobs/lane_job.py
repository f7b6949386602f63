"""The skeleton `contam run`, `contam probe` and `contam judge` share: (for run and probe, the
config's models and the store opened by :func:`run_job`) lanes -> engine -> writer -> display ->
summary -> exit status. A job describes its lanes and what to keep of a reply; this module runs
them and hands back a :class:`JobResult`, which ``contam.harness.cli`` prints. A run's batch lanes
(``contam run --batch``) go through the same skeleton beside the engine's lanes."""

from __future__ import annotations

import logging
import signal
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import anyio
import orjson
from rich.console import Console
from stamina.instrumentation import get_on_retry_hooks, set_on_retry_hooks

from contam.harness import __version__
from contam.harness.display import open_progress
from contam.harness.engine.batch_lane import BatchLane
from contam.harness.engine.counters import LaneStats
from contam.harness.engine.lanes import Accept, Engine, Lane
from contam.harness.config import ModelSpec, RunConfig, load_config
from contam.harness.engine.writer import BatchWriter
from contam.harness.errors import UserError
from contam.harness.jobs.live import serving_reads
from contam.harness.jobs.options.lane import JobOptions
from contam.harness.logs import run_log
from contam.harness.store import DEFAULT_STORE, Store, utc_now
from contam.harness.store.column_map import ColumnMap, parse_column_map
from contam.harness.store.records import KINDS
from contam.providers.registry import missing_key

log = logging.getLogger(__name__)

__all__ = ["JobOptions", "JobResult", "run_lanes", "run_job", "import_config_items",
           "refuse_missing_keys", "new_run_id", "interrupted_line", "run_row", "recorded_run",
           "harness_version", "failure_lines", "recovered_lines"]


@dataclass(kw_only=True)
class JobResult:
    """What a lane job did: its counters, the summary for stdout, the problems for stderr."""

    command: str  # run | judge
    run_id: str
    stats: list[LaneStats] = field(default_factory=list)
    interrupted: int | None = None  # the signal that drained it
    log_path: Path | None = None  # the run's log file (contam.harness.logs), named in its last line
    summary: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def exit_status(self) -> int:
        if self.interrupted is not None:
            return 128 + self.interrupted
        return 1 if any(s.stopped or s.failed for s in self.stats) else 0


Options = TypeVar("Options", bound=JobOptions)
Result = TypeVar("Result", bound=JobResult)
Notify = Callable[[str], None]
# The lanes of a second pass, once every lane of the first has ended uninterrupted (a run's
# ``--batch-fallback sync``: what the batch jobs left, asked synchronously).
SecondPass = Callable[[Notify], Sequence[Lane]]


async def run_lanes(store: Store, lanes: Sequence[Lane], *, result: JobResult, accept: Accept,
                    started: dict[str, Any], options: JobOptions,
                    first: Callable[[], None] | None = None,
                    batch_lanes: Sequence[BatchLane] = (),
                    then: SecondPass | None = None) -> JobResult:
    """Run ``lanes`` (and ``batch_lanes`` beside them) to their end under one recorded run
    (``first`` runs inside it before the lanes start); fills ``result``'s counters. A lane whose
    key is missing never starts (a ``provider_factory`` of the caller's own checks keys itself)."""
    engine = _engine(lanes, result.run_id, accept, options)
    if options.provider_factory is None:
        refuse_missing_keys(batch_lanes)
    stats = [*engine.stats, *(lane.stats for lane in batch_lanes)]
    if options.live is not None:
        options.live.watch(stats)
    console = options.console or Console()
    with _retries_unannounced(), run_log(store.path, result.run_id) as result.log_path, \
            recorded_run(store, started), \
            open_progress(stats, no_progress=options.no_progress, console=console) as progress:
        log.info("%s %s: %s -> %s", result.command, result.run_id,
                 ", ".join(lane.spec.name for lane in [*lanes, *batch_lanes]), store.path)
        if first is not None:
            first()
        async with BatchWriter(store, ctrl_c=options.handle_signals) as writer:
            writer.on_failure = engine.drain  # a full disk or a removed store: send nothing more
            await _run_beside(engine, batch_lanes, writer, progress.note, options)
            result.interrupted = engine.interrupted
            if then is not None and result.interrupted is None and writer.failure is None:
                second = _engine(then(progress.note), result.run_id, accept, options)
                stats += second.stats  # the display and the live board show them as they run
                writer.on_failure = second.drain
                await second.run(writer, notify=progress.note, handle_signals=options.handle_signals)
                result.interrupted = second.interrupted
        if writer.failure_line() is not None:
            raise UserError(writer.failure_line())
        _log_summary(stats)
    result.stats = stats
    return result


def _engine(lanes: Sequence[Lane], run_id: str, accept: Accept, options: JobOptions) -> Engine:
    if options.provider_factory is None:
        refuse_missing_keys(lanes)
    return Engine(lanes, run_id=run_id, accept=accept, provider_factory=options.provider_factory)


async def _run_beside(engine: Engine, batch_lanes: Sequence[BatchLane], writer: BatchWriter,
                      notify: Notify, options: JobOptions) -> None:
    """The engine's lanes and the batch lanes together. An interrupt that drained the engine
    ends the batch lanes too: their jobs are in the store, and the next run polls them."""
    async with anyio.create_task_group() as group:
        for lane in batch_lanes:
            group.start_soon(lane.run, writer, notify)
        await engine.run(writer, notify=notify, handle_signals=options.handle_signals)
        if engine.interrupted is not None:
            for lane in batch_lanes:
                lane.stats.interrupted = True
            group.cancel_scope.cancel()


def _log_summary(stats: Sequence[LaneStats]) -> None:
    for lane in stats:
        log.info("%s: %d/%d answered, %d failed%s", lane.label, lane.done, lane.total, lane.failed,
                 f", STOPPED ({lane.stopped}): {lane.stop_message}" if lane.stopped else "")


@contextmanager
def _retries_unannounced() -> Iterator[None]:
    """The attempts table, the run's log and the display record every retry; stamina's default
    hook would add a raw ``stamina.retry_scheduled`` warning per retry on stderr, under the live
    display or in a notebook. Off while the lanes run, then as the caller had it."""
    before = get_on_retry_hooks()
    set_on_retry_hooks([])
    try:
        yield
    finally:
        set_on_retry_hooks(before)


def run_job(config_path: str | Path, *, store: str | Path | None, options: Options, command: str,
            execute: Callable[..., Awaitable[Result]],
            prepare: Callable[[RunConfig, Sequence[ModelSpec]], tuple] | None = None) -> Result:
    """The start every model-lane command shares (``contam run``, ``contam probe``): the config,
    its selected models (none: refused), ``--limit`` checked, ``prepare``'s checks (what it returns
    goes to ``execute`` after the models), then on the opened store (created if need be) its
    config's items imported and ``execute(store, config, specs, *prepared, options)`` under
    :func:`serving_reads`; the summary starts with what opening and importing did."""
    config = load_config(config_path, store_flag=str(store) if store else None)
    specs = config.select(options.models)
    if not specs:
        raise UserError(f"{config.path}: no [[models]] to {command}")
    options.check_limit()
    prepared = prepare(config, specs) if prepare is not None else ()
    with Store(config.store or DEFAULT_STORE, create=True) as opened:
        recovered = recovered_lines(opened)
        imported = import_config_items(opened, config)
        with serving_reads(opened, command) as board:
            result = anyio.run(execute, opened, config, specs, *prepared,
                               replace(options, live=board))
    result.summary[:0] = [*recovered, *imported]
    return result


def _items_map(config: RunConfig) -> ColumnMap:
    """The config's ``[items] map``, checked against the items' columns in one line naming the
    config file."""
    try:
        return parse_column_map(config.items_map, KINDS["items"].required, "items")
    except UserError as exc:
        raise UserError(f"{config.path}: {exc}") from None


def import_config_items(store: Store, config: RunConfig) -> list[str]:
    """The config's ``items`` file, imported (idempotently) through its ``[items] map`` the way
    ``contam import items --map`` reads it; refused when the store then has no items at all.
    Returns the import's summary line."""
    lines = []
    if config.items is not None:
        from contam.harness.jobs.importing import import_file

        lines.append(import_file(store, "items", config.items,
                                 column_map=_items_map(config)).summary())
    if store.count("items") == 0:
        raise UserError(f"{store.path}: no items; name an `items` file in {config.path} "
                        "or run `contam import items FILE` first")
    return lines


def refuse_missing_keys(lanes: Sequence[Lane | BatchLane]) -> None:
    """Each lane whose key is missing is marked refused: reported once, before anything is sent,
    and never started; the others go on."""
    for lane in lanes:
        lane.refused = lane.refused or missing_key(lane.spec)  # a job's own refusal stands


def recovered_lines(store: Store) -> list[str]:
    """A summary line when opening the store replayed replies a killed run had received."""
    if not store.replayed:
        return []
    replies = "1 reply" if store.replayed == 1 else f"{store.replayed} replies"
    return [f"{store.path}: {replies} a killed run had received, recovered from its journal"]


def failure_lines(stats: Sequence[LaneStats]) -> list[str]:
    """Per model with failed cells: the commonest last errors, with counts."""
    return [f"{s.label}: {s.failed} failed — " + "; ".join(f"{cause} ({n})" for cause, n in
                                                          s.top_failures())
            for s in stats if s.failed]


# Why a model stops where running the same command again cannot help: the config, a key or the
# model's files must change first (a missing key, a model not on disk, a substituted model).
NEEDS_A_FIX = frozenset({"missing key", "bad key", "auth", "substitution", "fatal"})


def stopped_lines(command: str, stats: Sequence[LaneStats], again: str) -> list[str]:
    """A line for each model stopped by something to fix first (what to fix: its stop message),
    then one naming the models that the same command resumes."""
    stopped = [s for s in stats if s.stopped]
    lines = [f"contam {command}: {s.label} stopped ({s.stopped}): {s.stop_message}; fix that, "
             f"then run `{again}`" for s in stopped if s.stopped in NEEDS_A_FIX]
    waiting = [s.label for s in stopped if s.stopped not in NEEDS_A_FIX]
    if waiting:
        others = "; the others finished" if len(stopped) < len(stats) else ""
        what = "model stopped" if len(waiting) == 1 else "models stopped"
        lines.append(f"contam {command}: {len(waiting)} {what} ({', '.join(waiting)}){others}; "
                     f"run `{again}` again to resume")
    return lines


def interrupted_line(command: str, signum: int, again: str, kept: str) -> str:
    """``again`` is the command line that resumes (``RunConfig.command``)."""
    return (f"contam {command}: interrupted by {signal.Signals(signum).name}; every {kept} "
            f"received was committed; run `{again}` again to resume")


def new_run_id() -> str:
    """Sortable by start time (to the microsecond), unique by a random suffix."""
    return f"{utc_now():%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:8]}"


def run_row(run_id: str, kind: str, config: dict[str, Any], prompt_sha: str) -> dict[str, Any]:
    """A `runs` row for a run of any kind (run, judge, bench); config holds no secret values."""
    return {"run_id": run_id, "kind": kind, "started_at": utc_now(),
            "config": orjson.dumps(config).decode(), "prompt_sha256": prompt_sha,
            "harness_version": harness_version()}


@contextmanager
def recorded_run(store: Store, started: dict[str, Any]) -> Iterator[None]:
    """`runs` is append-only: a start row, then the same row again with finished_at set. A run
    that raised keeps only its start row, which is how an unfinished run reads."""
    store.append("runs", [started])
    yield
    store.append("runs", [{**started, "finished_at": utc_now()}])


def harness_version() -> str:
    """contam's version, as runs.harness_version records it (the one that `contam --version` says)."""
    return __version__
