"""``contam run CONFIG.toml``: ask every selected model every item it has not answered yet.

The run is resumable by construction: the work of each model is the list of (item, model) cells
without a row in ``answers`` (hence none in ``latest_answers``), read lazily from the store in item
order, so a killed or interrupted run is finished by running the same command again. A run leaves
two ``runs`` rows with the same ``run_id``: one when it starts, one with ``finished_at``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import duckdb

from harness.config import ModelSpec, RunConfig, load_config
from harness.engine.counters import LaneStats
from harness.engine.lanes import Lane, Task
from harness.engine.writer import Rows
from harness.errors import UserError
from harness.jobs.lane_job import (
    JobOptions, JobResult, failure_lines, interrupted_line, new_run_id, run_lanes, run_row,
)
from harness.prompts import prompt_sha256, question_request
from harness.store import DEFAULT_STORE, Store, utc_now
from harness.store.cells import count_unanswered, unanswered
from harness.text import normalise_answer
from providers.base import Reply

__all__ = ["run", "execute_run", "RunOptions", "pending_tasks",
           "summary_lines", "answer_rows"]

RunOptions = JobOptions  # the run's options are the lane jobs' options


def run(config_path: str | Path, *, store: str | None = None,
        options: JobOptions | None = None) -> JobResult:
    """``contam run``: ask every selected model every item it has not answered yet."""
    options = options or JobOptions()
    config = load_config(config_path, store_flag=store)
    specs = config.select(options.models)
    if not specs:
        raise UserError(f"{config.path}: no [[models]] to run")
    if options.limit is not None and options.limit <= 0:
        raise UserError(f"--limit must be a positive number, not {options.limit}")
    with Store(config.store or DEFAULT_STORE) as opened:
        imported = _import_items(opened, config)
        result = anyio.run(execute_run, opened, config, specs, options)
    result.summary[:0] = imported
    return result


async def execute_run(store: Store, config: RunConfig, specs: Sequence[ModelSpec],
                      options: JobOptions) -> JobResult:
    """The run itself on an open store."""
    result = JobResult(command="run", run_id=new_run_id())
    lanes = [_lane(store, spec, config.system_prompt, options.limit) for spec in specs]
    await run_lanes(store, lanes, result=result, accept=answer_rows(result.run_id, specs),
                    started=_run_row(result.run_id, config, specs, options), options=options)
    _summarise(config, result)
    return result


# -- the work: cells without an answer, in item order ------------------------------------------

def pending_tasks(con: duckdb.DuckDBPyConnection, spec: ModelSpec, system: str,
                  limit: int | None) -> Iterator[Task]:
    """The unanswered cells of ``spec`` as tasks, lazily, in item order (see
    :func:`harness.store.cells.unanswered`)."""
    for item_id, title, question in unanswered(con, spec.name, limit):
        yield Task(item_id=item_id, model=spec.name,
                   request=question_request(system, title or "", question or ""))


def _lane(store: Store, spec: ModelSpec, system: str, limit: int | None) -> Lane:
    total = count_unanswered(store.con, spec.name, limit)
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


def _run_row(run_id: str, config: RunConfig, specs: Sequence[ModelSpec],
             options: RunOptions) -> dict[str, Any]:
    public = {"config_file": str(config.path), "items": str(config.items) if config.items else None,
              "system_prompt": config.system_prompt, "limit": options.limit,
              "models": [spec.public_dict() for spec in specs]}  # names of key variables only
    return run_row(run_id, "run", public, prompt_sha256(config.system_prompt))


def _import_items(store: Store, config: RunConfig) -> list[str]:
    lines = []
    if config.items is not None:
        from harness.jobs.importing import import_file

        lines.append(import_file(store, "items", config.items).summary())
    if store.count("items") == 0:
        raise UserError(f"{store.path}: no items; name an `items` file in {config.path} "
                        "or run `contam import items FILE` first")
    return lines


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


def _summarise(config: RunConfig, result: JobResult) -> None:
    result.summary += summary_lines(result.stats) + failure_lines(result.stats)
    if result.interrupted is not None:
        result.problems.append(interrupted_line("run", result.interrupted, config.command("run"),
                                                "answer"))
        return
    stopped = [s.label for s in result.stats if s.stopped]
    if stopped:
        result.problems.append(
            f"contam run: {len(stopped)} model(s) stopped ({', '.join(stopped)}); the others "
            f"finished; run `{config.command('run')}` again to resume")
    failed = sum(s.failed for s in result.stats)
    if failed:
        result.problems.append(f"contam run: {failed} cell(s) failed after all attempts; run "
                               f"`{config.command('run')}` again to ask them again")
