"""``contam run CONFIG.toml``: ask every selected model every item it has not answered yet.

The run is resumable by construction: the work of each model is the list of (item, model) cells
without a row in ``answers`` (hence none in ``latest_answers``), read lazily from the store in item
order, so a killed or interrupted run is finished by running the same command again. A run leaves
two ``runs`` rows with the same ``run_id``: one when it starts, one with ``finished_at``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

import anyio
import duckdb
import orjson
from rich.console import Console

from harness import package_version
from harness.config import ModelSpec, RunConfig, load_config
from harness.display import open_progress
from harness.engine.counters import LaneStats
from harness.engine.lanes import Engine, Lane, ProviderFactory, RetryPolicy, Task
from harness.engine.writer import BatchWriter, Rows
from harness.errors import UserError
from harness.logs import run_log
from harness.prompts import prompt_sha256, question_request
from harness.store import DEFAULT_STORE, Store, utc_now
from harness.text import normalise_answer
from providers.base import Reply

log = logging.getLogger(__name__)

__all__ = ["run_command", "execute_run", "RunOptions", "pending_tasks", "count_pending",
           "new_run_id", "summary_lines", "answer_rows", "harness_version", "run_row",
           "recorded_run"]

_PAGE = 512  # rows fetched from the store at a time: the task list is never held in memory


def run_command(args: argparse.Namespace) -> int:
    config = load_config(args.config, store_flag=args.store)
    specs = config.select(model_names(args.models))
    if not specs:
        raise UserError(f"{config.path}: no [[models]] to run")
    if args.limit is not None and args.limit <= 0:
        raise UserError(f"--limit must be a positive number, not {args.limit}")
    options = RunOptions(limit=args.limit, no_progress=args.no_progress)
    with Store(config.store or DEFAULT_STORE) as store:
        _import_items(store, config)
        return anyio.run(execute_run, store, config, specs, options)


@dataclass(kw_only=True)
class RunOptions:
    """What a run is told besides the config. ``contam run`` sets the first two; tests, the demo,
    the judge and benchmarks set the rest."""

    limit: int | None = None  # the first N items (in file order) per model
    no_progress: bool = False
    console: Console | None = None  # where the display and the summary go (stdout)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    provider_factory: ProviderFactory | None = None  # None: providers.registry.create_provider
    handle_signals: bool = True  # SIGINT/SIGTERM drain the run (main thread only)


async def execute_run(store: Store, config: RunConfig, specs: Sequence[ModelSpec],
                      options: RunOptions) -> int:
    """The run itself on an open store; returns the exit status."""
    console = options.console or Console()
    run_id = new_run_id()
    lanes = [_lane(store, spec, config.system_prompt, options.limit) for spec in specs]
    engine = Engine(lanes, run_id=run_id, accept=answer_rows(run_id, specs),
                    retry=options.retry, provider_factory=options.provider_factory)
    with run_log(store.path, run_id) as log_path, \
            recorded_run(store, _run_row(run_id, config, specs, options)), \
            open_progress(engine.stats, no_progress=options.no_progress, console=console) as progress:
        log.info("run %s: %s -> %s", run_id, ", ".join(s.name for s in specs), store.path)
        async with BatchWriter(store) as writer:
            await engine.run(writer, notify=progress.note, handle_signals=options.handle_signals)
        for line in summary_lines(engine.stats):
            log.info("%s", line)
    status = _finish(config, engine, console.file)
    print(f"log: {log_path}", file=console.file)
    return status


# -- the work: cells without an answer, in item order ------------------------------------------

_SCOPE_SQL = """
WITH ordered AS (SELECT item_id, min(seq) AS first_seq FROM items GROUP BY item_id),
     scope AS (SELECT * FROM ordered ORDER BY first_seq {limit})
SELECT {columns}
FROM scope s JOIN latest_items i USING (item_id)
WHERE NOT EXISTS (SELECT 1 FROM answers a WHERE a.model = $model AND a.item_id = s.item_id)
{order}
"""


def _scope_sql(columns: str, limit: int | None, order: bool) -> str:
    return _SCOPE_SQL.format(columns=columns, limit="LIMIT $limit" if limit else "",
                             order="ORDER BY s.first_seq" if order else "")


def _params(model: str, limit: int | None) -> dict[str, Any]:
    return {"model": model, "limit": limit} if limit else {"model": model}


def count_pending(con: duckdb.DuckDBPyConnection, model: str, limit: int | None) -> int:
    """Cells of ``model`` among the first ``limit`` items (all items when None) with no answer."""
    sql = _scope_sql("count(*)", limit, order=False)
    return con.execute(sql, _params(model, limit)).fetchall()[0][0]  # fetchall: leaves no open result


def pending_tasks(con: duckdb.DuckDBPyConnection, spec: ModelSpec, system: str,
                  limit: int | None) -> Iterator[Task]:
    """The unanswered cells of ``spec`` as tasks, lazily, in item order.

    ``con`` must be a connection of its own (``store.con.cursor()``): the writer thread uses the
    store's main connection while this generator is being consumed."""
    con.execute(_scope_sql("i.item_id, i.title, i.question", limit, order=True),
                _params(spec.name, limit))
    while rows := con.fetchmany(_PAGE):
        for item_id, title, question in rows:
            yield Task(item_id=item_id, model=spec.name,
                       request=question_request(system, title or "", question or ""))


def _lane(store: Store, spec: ModelSpec, system: str, limit: int | None) -> Lane:
    total = count_pending(store.con, spec.name, limit)
    return Lane(spec=spec, total=total,
                tasks=pending_tasks(store.con.cursor(), spec, system, limit))


# -- what is kept ------------------------------------------------------------------------------

def answer_rows(run_id: str, specs: Sequence[ModelSpec]) -> Callable[[Task, Reply, float], Rows]:
    """The accept hook of a run: one ``answers`` row per reply (raw and normalised)."""
    by_label = {spec.name: spec for spec in specs}

    def accept(task: Task, reply: Reply, latency_s: float) -> Rows:
        spec = by_label[task.model]
        return {"answers": [{
            "run_id": run_id, "item_id": task.item_id, "model": task.model,
            "provider": spec.provider, "provider_model": spec.model,
            "served_model": reply.served_model, "answer_raw": reply.text,
            "answer": normalise_answer(reply.text), "finish_reason": reply.finish_reason,
            "input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens,
            "latency_s": latency_s, "created_at": utc_now()}]}

    return accept


def new_run_id() -> str:
    """Sortable by start time (to the microsecond), unique by a random suffix."""
    return f"{utc_now():%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:8]}"


def _run_row(run_id: str, config: RunConfig, specs: Sequence[ModelSpec],
             options: RunOptions) -> dict[str, Any]:
    public = {"config_file": str(config.path), "items": str(config.items) if config.items else None,
              "system_prompt": config.system_prompt, "limit": options.limit,
              "models": [spec.public_dict() for spec in specs]}  # names of key variables only
    return run_row(run_id, "run", public, prompt_sha256(config.system_prompt))


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
    """The installed contam version, as runs.harness_version records it."""
    return package_version("contam")


def _import_items(store: Store, config: RunConfig) -> None:
    if config.items is not None:
        from harness.jobs.importing import import_file

        print(import_file(store, "items", config.items).summary())
    if store.count("items") == 0:
        raise UserError(f"{store.path}: no items; name an `items` file in {config.path} "
                        "or run `contam import items FILE` first")


def model_names(models: str | None) -> list[str] | None:
    return [name.strip() for name in models.split(",") if name.strip()] if models else None


# -- the end: summary and exit status ----------------------------------------------------------

def summary_lines(stats: Sequence[LaneStats]) -> list[str]:
    """One line per model: answered / failed / stopped-why."""
    return [_summary_line(s) for s in stats]


def _summary_line(s: LaneStats) -> str:
    line = f"{s.label}: {s.done}/{s.total} answered"
    if s.failed:
        line += f", {s.failed} failed after all attempts (asked again by the next run)"
    if s.stopped == "quota":
        return line + f"; STOPPED: the day's quota is used up, run again later to resume ({s.stop_message})"
    if s.stopped:
        return line + f"; STOPPED ({s.stopped}): {s.stop_message}"
    if s.interrupted and s.remaining:
        return line + f"; interrupted with {s.remaining} left"
    return line


def _finish(config: RunConfig, engine: Engine, out: TextIO) -> int:
    for line in summary_lines(engine.stats):
        print(line, file=out)
    if engine.interrupted is not None:
        name = signal.Signals(engine.interrupted).name
        print(f"contam run: interrupted by {name}; every answer received was committed; run "
              f"`{config.command('run')}` again to resume", file=sys.stderr)
        return 128 + engine.interrupted
    stopped = [s.label for s in engine.stats if s.stopped]
    if stopped:
        print(f"contam run: {len(stopped)} model(s) stopped ({', '.join(stopped)}); the others "
              f"finished; run `{config.command('run')}` again to resume", file=sys.stderr)
        return 1
    return 0

