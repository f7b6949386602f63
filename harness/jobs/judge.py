"""``contam judge CONFIG.toml``: the stateless LLM judge (ARCHITECTURE.md), through the run engine.

Design notes: ARCHITECTURE.md, The judge.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio

from contam.harness.config import ModelSpec, RunConfig, load_config
from contam.harness.engine.lanes import Lane, Task
from contam.harness.engine.writer import Rows
from contam.harness.errors import UserError
from contam.harness.jobs.live import serving_reads
from contam.harness.jobs.lane_job import (
    NEEDS_A_FIX, JobOptions, JobResult, failure_lines, interrupted_line, new_run_id,
    recovered_lines, run_lanes, run_row,
)
from contam.harness.store import DEFAULT_STORE, Store, utc_now
from contam.harness.store import raters
from contam.harness.store.cells import unjudged
from contam.harness.text import is_blank
from contam.metrics.judge import (
    JUDGE_RUBRIC, MalformedLabel, judge_request, missing_labels, parse_label, rubric_sha256,
)
from contam.providers.base import Reply

__all__ = ["judge", "execute_judge", "JudgeResult", "JudgeCell", "judge_rater",
           "pending_cells", "summary_lines", "study_rubric", "BYPASS_SOURCE"]

# labels.source_file of a label decided by rule instead of by a call.
BYPASS_SOURCE = "rule:empty-answer"
_EXAMPLES = 5  # flagged cells named in the summary


def judge_rater(spec: ModelSpec) -> str:
    return raters.judge_rater(spec.name)


def study_rubric(config: RunConfig) -> str:
    """The study's ``[judge] rubric`` file, else the paper's rubric; a missing or unreadable file
    and a rubric that does not name all three labels are one-line errors."""
    path = config.study.rubric
    if path is None:
        return JUDGE_RUBRIC
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{config.path}: [judge] rubric: no such file {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{config.path}: [judge] rubric: cannot read {path} ({exc})") from None
    missing = missing_labels(text)
    if missing:
        raise UserError(f"{path}: the rubric does not name the label(s) {', '.join(missing)} "
                        "(the judge answers right, partially right or wrong)")
    return text


# -- the work ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class JudgeCell:
    item_id: str
    model: str
    reference: str | None
    answer: str | None

    @property
    def flagged(self) -> bool:
        """No reference to judge against (whatever the answer): flagged, never guessed."""
        return is_blank(self.reference)

    @property
    def bypassed(self) -> bool:
        """A blank answer against a real reference is wrong; no judge is needed to say so."""
        return not self.flagged and is_blank(self.answer)


def pending_cells(store: Store, rater: str, rubric: str,
                  models: Sequence[str] | None = None) -> list[JudgeCell]:
    """Cells without an up-to-date label from ``rater`` under ``rubric``, in item order (see
    :func:`contam.harness.store.cells.unjudged`)."""
    return [JudgeCell(*row) for row in unjudged(store, rater, rubric, models)]


@dataclass
class _Plan:
    """The pending cells split three ways; ``--limit`` counts the cells that get a label."""

    ask: list[JudgeCell] = field(default_factory=list)
    bypass: list[JudgeCell] = field(default_factory=list)
    flagged: list[JudgeCell] = field(default_factory=list)


def _plan(cells: Sequence[JudgeCell], limit: int | None) -> _Plan:
    plan = _Plan()
    for cell in cells:
        if cell.flagged:
            plan.flagged.append(cell)
        elif limit is None or len(plan.ask) + len(plan.bypass) < limit:
            (plan.bypass if cell.bypassed else plan.ask).append(cell)
    return plan


# -- the command -------------------------------------------------------------------------------

def judge(config_path: str | Path, *, store: str | None = None,
          options: JobOptions | None = None) -> JudgeResult:
    """``contam judge``: label every answer that has no up-to-date label from the judge."""
    options = options or JobOptions()
    config = load_config(config_path, store_flag=store)
    study_rubric(config)  # refused before the store opens
    options.check_limit()
    with Store(config.store or DEFAULT_STORE) as opened, serving_reads(opened, "judge") as board:
        recovered = recovered_lines(opened)
        result = anyio.run(execute_judge, opened, config, replace(options, live=board),
                           options.models)
    result.summary[:0] = recovered
    return result


@dataclass(kw_only=True)
class JudgeResult(JobResult):
    """What one ``contam judge`` did."""

    rater: str
    judged: int = 0  # labels from a judge call
    bypassed: int = 0  # blank answers labelled wrong without a call
    flagged: list[tuple[str, str]] = field(default_factory=list)  # (item_id, model)
    malformed: int = 0  # replies that were not a bare label (each asked again)
    failed: int = 0  # cells still unlabelled after max_attempts


async def execute_judge(store: Store, config: RunConfig, options: JobOptions,
                        models: Sequence[str] | None = None) -> JudgeResult:
    """The whole judge pass on an open store."""
    spec = _judge_spec(config)
    text = study_rubric(config)
    rater, rubric = judge_rater(spec), rubric_sha256(text)
    _check_models(store, models)
    plan = _plan(pending_cells(store, rater, rubric, models), options.limit)
    result = JudgeResult(command="judge", run_id=new_run_id(), rater=rater,
                         bypassed=len(plan.bypass),
                         flagged=[(c.item_id, c.model) for c in plan.flagged])
    started = _run_row(result.run_id, config, spec, models, options.limit, rubric)
    lanes = [Lane(spec=spec, tasks=_tasks(plan.ask, text), total=len(plan.ask))]
    await run_lanes(store, lanes, result=result, accept=_label_rows(result, rubric),
                    started=started,
                    options=options,
                    first=lambda: _write_bypass(store, plan.bypass, rater, rubric, result.run_id))
    result.judged, result.failed = result.stats[0].done, result.stats[0].failed
    _summarise(config, result)
    return result


def _judge_spec(config: RunConfig) -> ModelSpec:
    if config.judge is None:
        raise UserError(f"{config.path}: no [judge] table (provider and model of the judge)")
    return config.judge


def _check_models(store: Store, models: Sequence[str] | None) -> None:
    known = {row[0] for row in store.query("SELECT DISTINCT model FROM latest_answers")}
    if not known:
        raise UserError(f"{store.path}: no answers to judge; run `contam run` or "
                        "`contam import answers` first")
    missing = [name for name in models or () if name not in known]
    if missing:
        raise UserError(f"{store.path}: no answers from model {', '.join(missing)}")


def _write_bypass(store: Store, cells: Sequence[JudgeCell], rater: str, rubric: str,
                  run_id: str) -> None:
    now = utc_now()
    rows = [{"item_id": c.item_id, "model": c.model, "rater": rater, "label": "wrong",
             "rubric_sha256": rubric, "run_id": run_id, "source_file": BYPASS_SOURCE,
             "created_at": now} for c in cells]
    with store.transaction():
        store.append("labels", rows)


def _tasks(cells: Sequence[JudgeCell], rubric: str) -> Iterator[Task]:
    for cell in cells:
        # Task.model is the answering model: attempts rows then name the cell being judged.
        yield Task(item_id=cell.item_id, model=cell.model,
                   request=judge_request(cell.reference or "", cell.answer or "", rubric=rubric))


def _label_rows(result: JudgeResult, rubric: str):
    """The engine's accept hook: a bare label becomes a labels row (under the rubric's sha256);
    anything else is raised."""

    def accept(task: Task, reply: Reply, latency_s: float) -> Rows:
        try:
            label = parse_label(reply.text)
        except MalformedLabel:
            result.malformed += 1
            raise
        return {"labels": [{"item_id": task.item_id, "model": task.model, "rater": result.rater,
                            "label": label, "rubric_sha256": rubric, "run_id": result.run_id,
                            "created_at": utc_now()}]}

    return accept


def _run_row(run_id: str, config: RunConfig, spec: ModelSpec, models: Sequence[str] | None,
             limit: int | None, rubric: str) -> dict[str, Any]:
    public = {"config_file": str(config.path), "judge": spec.public_dict(),
              "models": list(models) if models else None, "limit": limit,
              "rubric_sha256": rubric}  # names of key variables only, never values
    if config.study.rubric is not None:  # the paper's judge runs record what they always did
        public["rubric_file"] = str(config.study.rubric)
    return run_row(run_id, "judge", public, rubric)


# -- the end: summary and exit status ----------------------------------------------------------

def summary_lines(result: JudgeResult) -> list[str]:
    stats = result.stats[0] if result.stats else None
    total = stats.total if stats else 0
    lines = [f"{result.rater}: {result.judged}/{total} cells labelled by the judge, "
             f"{result.bypassed} blank answers labelled wrong without a call",
             f"{result.malformed} malformed judge replies (recorded in attempts, asked again)"]
    if result.failed:
        lines.append(f"{result.failed} cells unlabelled after all attempts (asked again by the "
                     "next `contam judge`)")
    if result.flagged:
        examples = ", ".join(f"{item}/{model}" for item, model in result.flagged[:_EXAMPLES])
        more = ", ..." if len(result.flagged) > _EXAMPLES else ""
        lines.append(f"{len(result.flagged)} cells flagged: empty reference (not judged, no "
                     f"label): {examples}{more}")
    if stats and stats.stopped:
        lines.append(f"judge STOPPED ({stats.stopped}): {stats.stop_message}")
    return lines


def _summarise(config: RunConfig, result: JudgeResult) -> None:
    result.summary += summary_lines(result) + failure_lines(result.stats)
    stats = result.stats[0] if result.stats else None
    if result.interrupted is not None:
        result.problems.append(interrupted_line("judge", result.interrupted,
                                                config.command("judge"), "label"))
    elif stats and stats.stopped in NEEDS_A_FIX:
        result.problems.append(f"contam judge: the judge stopped ({stats.stopped}): "
                               f"{stats.stop_message}; fix that, then run `{config.command('judge')}`")
    elif stats and stats.stopped:
        result.problems.append(f"contam judge: the judge stopped ({stats.stopped}); run "
                               f"`{config.command('judge')}` again to resume")
    elif result.failed:
        result.problems.append(f"contam judge: {result.failed} cell(s) unlabelled after all "
                               f"attempts; run `{config.command('judge')}` again to ask again")
