"""``contam probe KIND CONFIG``: a contamination probe (``contam.metrics.probe_registry.PROBES``) on every
selected model, through the same engine as ``contam run``. A probe that runs on token
log-probabilities (min-k) goes to :mod:`contam.harness.jobs.probe_text`; the rest ask for completions:

Each (item, model) cell asks the probe's prompts (cdd: one greedy answer and N samples); every
completion is a ``probe_samples`` row of its own, keyed by (probe, params_sha256, item, model,
variant, sample), and what the probe makes of a cell is scored once all its samples are in
(``probe_scores``). The probe's parameters are recorded once in ``probe_params`` under their hash,
and the run's ``runs`` row (kind ``probe``) names them too.

Same lanes, rate limits, retries, stateless requests without tools, live display, SIGINT drain,
exit codes and reply journal as ``contam run`` (:mod:`contam.harness.jobs.lane_job`); ``--batch`` sends
the same request bodies as provider batch jobs. Resume is by construction: the work of each model
is the sample numbers it lacks (:func:`contam.harness.store.cells.missing_samples`), so a killed probe
asks exactly the missing samples when run again, and scores what it could not score before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contam.harness.config import ModelSpec, RunConfig
from contam.harness.declare import flag_of
from contam.harness.engine.batch_lane import BatchLane
from contam.harness.engine.counters import LaneStats
from contam.harness.engine.lanes import Accept, Lane
from contam.harness.errors import UserError
from contam.harness.jobs.lane_job import (
    JobOptions, JobResult, failure_lines, interrupted_line, new_run_id, run_job, run_lanes, run_row,
)
from contam.harness.jobs.probe_text import execute_text_probe, refusals
from contam.harness.jobs.probe_work import (
    ProbePlan, ShortReplies, missing_count, parameter_flags, pending_count, pending_tasks,
    record_params, refusal, sample_rows, score_complete,
)
from contam.harness.jobs.options.lane import ProbeOptions
from contam.harness.jobs.run import batch_mode, options_as, run_prompt, summary_lines
from contam.harness.prompts import USER_TEMPLATE
from contam.harness.store import Store
from contam.metrics.probe_registry import TEXT_LOGPROBS, ProbeContext, build_probe, probe_spec
from contam.metrics.probes import GenerationProbe, TextProbe

__all__ = ["probe", "execute_probe", "ProbeOptions", "ProbeResult", "make_probe"]


@dataclass(kw_only=True)
class ProbeResult(JobResult):
    """What one ``contam probe`` did, beside the lanes' counters."""

    probe: str
    params_sha256: str
    samples_stored: int = 0  # rows this run added to probe_samples
    cells_scored: int = 0
    missing: dict[str, int] = field(default_factory=dict)  # model -> samples still missing
    flags: str = ""  # the parameter flags given, for the command line that resumes

    @property
    def exit_status(self) -> int:
        status = super().exit_status
        return status or (1 if any(self.missing.values()) else 0)


def make_probe(kind: str, config: RunConfig,
               parameters: dict[str, Any]) -> GenerationProbe | TextProbe:
    """The probe ``kind`` on what the study lends it (its prompt and name), its parameters
    checked (one-line UserError)."""
    study = config.study
    context = ProbeContext(system_prompt=config.system_prompt,
                           question_template=study.user_template or USER_TEMPLATE,
                           own_template=study.user_template is not None,
                           study_name=study.name)
    try:
        return build_probe(kind, context, parameters)
    except ValueError as exc:
        raise UserError(f"contam probe {kind}: {exc}") from None


def probe(kind: str, config_path: str | Path, *, store: str | Path | None = None,
          options: ProbeOptions | None = None) -> JobResult:
    """``contam probe KIND``: every selected model answers what the probe asks until every item
    in scope is scored (:func:`execute_probe`)."""
    options = options or ProbeOptions()

    def prepare(config: RunConfig, specs: Sequence[ModelSpec]) -> tuple:
        built = make_probe(kind, config, options.parameters)
        if options.batch and not probe_spec(kind).batchable:
            raise UserError(f"contam probe {kind}: {flag_of(ProbeOptions, 'batch')} sends requests as batch jobs, and "
                            f"{kind} sends none (it scores each item's text)")
        refused = refusals(specs) if probe_spec(kind).runs == TEXT_LOGPROBS else []
        if refused:  # the whole probe, before anything is sent
            raise UserError(f"{kind} needs token log-probabilities: {'; '.join(refused)}")
        return (built,)

    return run_job(config_path, store=store, options=options, command="probe",
                   execute=execute_probe, prepare=prepare)


async def execute_probe(store: Store, config: RunConfig, specs: Sequence[ModelSpec],
                        built: GenerationProbe | TextProbe, options: JobOptions) -> JobResult:
    """The probe on an open store, as its spec says it runs: a text probe by
    :func:`contam.harness.jobs.probe_text.execute_text_probe`, the others by :func:`_execute_requests`."""
    options = options_as(ProbeOptions, options)
    if probe_spec(built.kind).runs == TEXT_LOGPROBS:
        return await execute_text_probe(store, config, specs, built, options,
                                        parameter_flags(options.parameters))
    return await _execute_requests(store, config, specs, built, options)


async def _execute_requests(store: Store, config: RunConfig, specs: Sequence[ModelSpec],
                            built: GenerationProbe, options: ProbeOptions) -> ProbeResult:
    """Synchronous lanes, batch lanes for the models in batch mode, then the scoring of every
    complete cell."""
    run_prompt(store, config)  # the study's template, checked against the items' columns
    plan = ProbePlan.build(store, built, options.limit)
    purpose = f"probe:{built.kind}:{plan.params_sha256[:16]}"
    openings = {spec.name: batch_mode(store, spec, options, purpose) for spec in specs}
    result = ProbeResult(command="probe", run_id=new_run_id(), probe=built.kind,
                         params_sha256=plan.params_sha256,
                         flags=parameter_flags(options.parameters))
    sync_specs = [spec for spec in specs if openings[spec.name] is None]
    short = ShortReplies(plan, sync_specs)  # batch jobs leave theirs to the next run
    accept = sample_rows(result.run_id, plan, specs, short)
    lanes = [_lane(store, plan, spec) for spec in specs if openings[spec.name] is None]
    batch_lanes = [_batch_lane(store, plan, spec, result.run_id, accept, options, purpose, opening)
                   for spec in specs if (opening := openings[spec.name]) is not None]
    before = store.count("probe_samples")
    await run_lanes(store, lanes, result=result, accept=accept, options=options,
                    started=_run_row(result.run_id, config, specs, plan, options),
                    first=lambda: record_params(store, built.kind,
                                               {plan.params_sha256: built.params()}),
                    batch_lanes=batch_lanes, then=short.lanes)
    result.samples_stored = store.count("probe_samples") - before
    result.cells_scored = score_complete(store, plan, result.run_id, [s.name for s in specs])
    result.missing = {spec.name: missing_count(store, plan, spec) for spec in specs}
    _summarise(config, plan, result)
    return result


def _lane(store: Store, plan: ProbePlan, spec: ModelSpec) -> Lane:
    refused = refusal(plan, spec)
    tasks = [] if refused else pending_tasks(store, plan, spec)
    return Lane(spec=spec, tasks=tasks, total=len(tasks), refused=refused)


def _batch_lane(store: Store, plan: ProbePlan, spec: ModelSpec, run_id: str, accept: Accept,
                options: ProbeOptions, purpose: str, opening: str) -> BatchLane:
    pending = pending_count(store, plan, spec)
    stats = LaneStats(label=f"{spec.name} (batch)", total=pending, cap=max(1, pending))
    return BatchLane(store, spec, lambda: iter(pending_tasks(store, plan, spec)), run_id=run_id,
                     accept=accept, options=options.batch_settings(), stats=stats, purpose=purpose,
                     opening=opening or None)


def _run_row(run_id: str, config: RunConfig, specs: Sequence[ModelSpec], plan: ProbePlan,
             options: ProbeOptions) -> dict[str, Any]:
    public = {"config_file": str(config.path), "probe": plan.probe.kind,
              "params": plan.probe.params(), "params_sha256": plan.params_sha256,
              "limit": options.limit, "models": [spec.public_dict() for spec in specs]}
    return run_row(run_id, "probe", public, plan.params_sha256)


# -- the end: summary and exit status ----------------------------------------------------------

def _summarise(config: RunConfig, plan: ProbePlan, result: ProbeResult) -> None:
    again = config.command(f"probe {plan.probe.kind}") + result.flags
    result.summary += [f"probe {plan.probe.kind} (params {plan.params_sha256[:12]}): "
                       f"{len(plan.items)} items, {plan.samples_per_model} samples per model"]
    result.summary += summary_lines(result.stats, "requests answered")
    result.summary += failure_lines(result.stats)
    result.summary.append(f"{result.samples_stored} samples stored, {result.cells_scored} cells "
                          "scored")
    result.summary += [f"{model}: {count} samples still missing"
                       for model, count in result.missing.items() if count]
    if result.interrupted is not None:
        result.problems.append(interrupted_line("probe", result.interrupted, again, "sample"))
    elif result.exit_status:
        result.problems.append(f"contam probe: {sum(result.missing.values())} samples still "
                               f"missing; run `{again}` again to ask them")

