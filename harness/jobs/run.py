"""``contam run CONFIG.toml``: ask every selected model every item it has not answered yet.

The run is resumable by construction: the work of each model is the list of (item, model) cells
without a row in ``answers`` (hence none in ``latest_answers``), read lazily from the store in item
order, so a killed or interrupted run is finished by running the same command again. A run leaves
two ``runs`` rows with the same ``run_id``: one when it starts, one with ``finished_at``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

import orjson

from contam.harness.config import ModelSpec, RunConfig
from contam.harness.engine.batch_lane import BatchLane, open_job_count, uses_batch
from contam.harness.engine.counters import LaneStats
from contam.harness.engine.lanes import Accept, Lane, Task
from contam.harness.engine.writer import Rows
from contam.harness.jobs.options.lane import RunOptions
from contam.harness.jobs.lane_job import (
    JobOptions, JobResult, SecondPass, failure_lines, interrupted_line, new_run_id, run_job,
    run_lanes, run_row, stopped_lines,
)
from contam.harness.prompts import QuestionPrompt, study_prompt
from contam.harness.store import Store, utc_now
from contam.harness.store.cells import count_unanswered, item_columns, unanswered
from contam.harness.text import normalise_answer, visible
from contam.metrics.outcome import default_outcome, parse_outcome, prompt_mismatch
from contam.providers.base import Reply

__all__ = ["run", "execute_run", "RunOptions", "options_as", "batch_mode",
           "pending_tasks", "summary_lines", "answer_rows"]


def run(config_path: str | Path, *, store: str | None = None,
        options: JobOptions | None = None) -> JobResult:
    """``contam run``: ask every selected model every item it has not answered yet (with
    :class:`RunOptions`, models in batch mode as provider batch jobs)."""
    return run_job(config_path, store=store, options=options_as(RunOptions, options or JobOptions()),
                   command="run", execute=execute_run)


Options = TypeVar("Options", bound=JobOptions)


def options_as(cls: type[Options], options: JobOptions) -> Options:
    """``options`` as a ``cls`` (a run's, a probe's): itself when it is one, else a ``cls`` with
    the fields they share (batch mode off, a probe's parameters at their defaults)."""
    if isinstance(options, cls):
        return options
    names = {f.name for f in fields(cls)}
    return cls(**{f.name: getattr(options, f.name) for f in fields(options) if f.name in names})


async def execute_run(store: Store, config: RunConfig, specs: Sequence[ModelSpec],
                      options: JobOptions) -> JobResult:
    """The run itself on an open store: the synchronous lanes and, beside them, the batch lanes
    of the models in batch mode."""
    options = options_as(RunOptions, options)
    prompt = run_prompt(store, config)  # a bad template is refused before anything is written
    _warn_of_prompt(store, config)
    result = JobResult(command="run", run_id=new_run_id())
    accept = answer_rows(result.run_id, specs)
    openings = {spec.name: batch_mode(store, spec, options) for spec in specs}
    lanes = [_lane(store, spec, prompt, options.limit)
             for spec in specs if openings[spec.name] is None]
    batch_lanes = [_batch_lane(store, spec, prompt, result.run_id, accept, options,
                               opening) for spec in specs
                   if (opening := openings[spec.name]) is not None]
    await run_lanes(store, lanes, result=result, accept=accept,
                    started=_run_row(result.run_id, config, specs, options, prompt),
                    options=options,
                    batch_lanes=batch_lanes, then=_sync_fallback(store, config, batch_lanes, options))
    _summarise(config, result)
    return result


def run_prompt(store: Store, config: RunConfig) -> QuestionPrompt:
    """The study's question prompt, its template checked against the stored items' columns."""
    template = config.study.user_template
    columns = item_columns(store) if template is not None else []
    return study_prompt(config.system_prompt, template, columns, f"{config.path}: [prompt] user")


def _warn_of_prompt(store: Store, config: RunConfig) -> None:
    """Before the first request: one line on stderr where the study's outcome cannot be met by
    the prompt (an exact match under a prompt that asks for sentences)."""
    study = config.study
    outcome = (parse_outcome(study.correct) if study.correct else
               default_outcome(store.count("latest_labels") > 0, study.metrics))
    line = prompt_mismatch(outcome, (config.system_prompt, study.user_template))
    if line:
        print(visible(line), file=sys.stderr)


# -- batch mode --------------------------------------------------------------------------------

def batch_mode(store: Store, spec: ModelSpec, options: RunOptions,
               purpose: str | None = None) -> str | None:
    """None: the model runs synchronously. Otherwise it goes in batch mode, for --batch /
    ``batch = true``, or because it has open jobs of this ``purpose`` (None: a run's; never asked
    twice); the string is the note its lane opens with ("" for none)."""
    if uses_batch(spec, options.batch):
        return ""
    open_jobs = open_job_count(store, spec, purpose)
    if not open_jobs:
        return None
    return (f"{spec.name}: {open_jobs} batch job(s) of an earlier run still open: this run "
            "collects them in batch mode instead of asking their cells again")


def _batch_lane(store: Store, spec: ModelSpec, prompt: QuestionPrompt, run_id: str,
                accept: Accept, options: RunOptions, opening: str) -> BatchLane:
    pending = count_unanswered(store, spec.name, options.limit)
    stats = LaneStats(label=f"{spec.name} (batch)", total=pending, cap=max(1, pending))
    return BatchLane(store, spec, lambda: pending_tasks(store, spec, prompt, options.limit),
                     run_id=run_id, accept=accept, options=options.batch_settings(), stats=stats,
                     opening=opening or None)


def _sync_fallback(store: Store, config: RunConfig, batch_lanes: Sequence[BatchLane],
                   options: RunOptions) -> SecondPass | None:
    """``--batch-fallback sync``: what the batch jobs left unanswered, asked synchronously."""
    if not batch_lanes or options.batch_settings().fallback != "sync":
        return None

    def lanes(notify: Callable[[str], None]) -> list[Lane]:
        specs = [lane.spec for lane in batch_lanes if not lane.stats.stopped]
        prompt = run_prompt(store, config)
        left = [lane for lane in (_lane(store, spec, prompt, options.limit)
                                  for spec in specs) if lane.total]
        if left:
            notify(f"asking {sum(lane.total for lane in left)} cells left by the batch jobs "
                   "synchronously")
        return left

    return lanes


# -- the work: cells without an answer, in item order ------------------------------------------

def pending_tasks(store: Store, spec: ModelSpec, prompt: QuestionPrompt,
                  limit: int | None) -> Iterator[Task]:
    """The unanswered cells of ``spec`` as tasks, lazily, in item order (see
    :func:`contam.harness.store.cells.unanswered`)."""
    for item_id, title, subset, question, extra in unanswered(store, spec.name, limit):
        values = {**orjson.loads(extra or "{}"), "title": title, "subset": subset,
                  "question": question}  # the item's own columns and nothing else (R1)
        yield Task(item_id=item_id, model=spec.name, request=prompt.request(values))


def _lane(store: Store, spec: ModelSpec, prompt: QuestionPrompt, limit: int | None) -> Lane:
    total = count_unanswered(store, spec.name, limit)
    return Lane(spec=spec, total=total,
                tasks=pending_tasks(store, spec, prompt, limit))


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
             options: RunOptions, prompt: QuestionPrompt) -> dict[str, Any]:
    public = {"config_file": str(config.path), "items": str(config.items) if config.items else None,
              "system_prompt": config.system_prompt, "limit": options.limit,
              "models": [spec.public_dict() for spec in specs],  # names of key variables only
              "study": config.study.to_record()}
    return run_row(run_id, "run", public, prompt.sha256)


# -- the end: summary and exit status ----------------------------------------------------------

def summary_lines(stats: Sequence[LaneStats], done: str = "answered") -> list[str]:
    """One line per model: answered (``done``: what became of a job's tasks, "texts scored") /
    failed / stopped-why."""
    return [_summary_line(s, done) for s in stats]


def _summary_line(s: LaneStats, done: str) -> str:
    line = f"{s.label}: {s.done}/{s.total} {done}"
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
    result.problems += stopped_lines("run", result.stats, config.command("run"))
    failed = sum(s.failed for s in result.stats)
    if failed:
        result.problems.append(f"contam run: {failed} cell(s) failed after all attempts; run "
                               f"`{config.command('run')}` again to ask them again")
