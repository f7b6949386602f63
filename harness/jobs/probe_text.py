"""``contam probe KIND CONFIG`` for a probe that runs on token log-probabilities (``runs =
TEXT_LOGPROBS`` in ``contam.metrics.probe_registry``; min-k): each item's text scored under every selected
model that gives them (:class:`contam.metrics.probes.TextProbe`).

Which models can: ``provider = "local"`` (one forward pass, the whole distribution) and OpenAI-
compatible servers that return prompt log-probabilities (vLLM; each token's own only, see
:mod:`contam.providers.openai_logprobs`). Every other model is refused in one line before anything is
sent (``Provider.text_logprobs_refusal``).

It runs on the engine of ``contam run`` (lanes, limits, retries, the live display, the single
writer, SIGINT draining, exit codes): each item is one task whose "request" carries the text to
score, and :class:`TextScorer` turns the engine's ``generate`` into the provider's
``text_logprobs``. Per (item, model) it stores, in one transaction, the probe's ``probe_scores``
rows and one ``probe_samples`` row (variant ``tokens``) whose ``detail`` holds the per-token values
for audit. Both carry the ``params_sha256`` of the model's parameters (``TextProbe.params``: the
probe's own, the log-probability source, the text rule), recorded once in ``probe_params``.
Resumable: an (item, model) whose ``TextProbe.metric`` row exists under those parameters is not
asked again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import httpx
import orjson

from contam.harness.config import ModelSpec, RunConfig
from contam.harness.engine.lanes import Accept, Lane, Task
from contam.harness.engine.writer import Rows
from contam.harness.jobs.lane_job import (
    JobOptions, JobResult, failure_lines, interrupted_line, new_run_id, run_lanes, run_row,
)
from contam.harness.jobs.probe_work import probe_item, record_params, sample_key, sample_row
from contam.harness.jobs.run import summary_lines
from contam.harness.prompts import text_rule
from contam.harness.store import Store
from contam.harness.store.cells import item_columns, unscored_items
from contam.harness.text import sha256_text
from contam.metrics.probes import ProbeItem, TextProbe, params_sha256
from contam.providers.base import Provider, Reply, Request, TextLogprobs
from contam.providers.registry import create_provider, provider_class

__all__ = ["execute_text_probe", "TextScorer", "ScoredReply", "refusals", "model_params",
           "pending_items"]

# Significant digits kept of each per-token value in the audit row: a local model's values are
# float32 (about 7 digits), and the row stays a fraction of what full reprs would take.
_DIGITS = 7
# What each attempt's row says it asked (attempts.variant / samples): one scored text per item.
_TAGS = {"variant": "tokens", "samples": [0]}


def refusals(specs: Sequence[ModelSpec]) -> list[str]:
    """One line for each model that cannot give a text's token log-probabilities."""
    return [reason for spec in specs
            if (reason := provider_class(spec).text_logprobs_refusal(spec)) is not None]


def model_params(spec: ModelSpec, probe: TextProbe, rule: str | None = None) -> dict[str, Any]:
    """The probe's parameters for one model, which name where its log-probabilities come from
    (``Provider.text_logprobs_source``: a forward pass, or a server's prompt_logprobs) and the
    study's text rule where it has one."""
    return probe.params(provider_class(spec).text_logprobs_source or "", rule)


# -- the run ------------------------------------------------------------------------------------

async def execute_text_probe(store: Store, config: RunConfig, specs: Sequence[ModelSpec],
                             probe: TextProbe, options: JobOptions, flags: str = "") -> JobResult:
    """The probe on an open store: one lane per model, its pending items as tasks. ``flags``:
    the parameter flags given, for the command line that resumes."""
    rule = _text_rule(store, config)
    result = JobResult(command="probe", run_id=new_run_id())
    params = {spec.name: model_params(spec, probe, rule) for spec in specs}
    hashes = {name: params_sha256(probe.kind, p) for name, p in params.items()}
    by_hash = {hashes[name]: p for name, p in params.items()}
    lanes = [_lane(store, probe, spec, hashes[spec.name], options.limit, rule) for spec in specs]
    started = run_row(result.run_id, "probe", _run_config(config, specs, probe, options, params),
                      sha256_text(probe.kind))
    await run_lanes(store, lanes, result=result, accept=_accept(result.run_id, specs, probe),
                    started=started, options=_scoring_options(options),
                    first=lambda: record_params(store, probe.kind, by_hash))
    _summarise(config, result, probe.kind, flags)
    return result


def _scoring_options(options: JobOptions) -> JobOptions:
    """The options with a provider factory that scores instead of generating."""
    make = options.provider_factory or create_provider

    def factory(spec: ModelSpec, client: httpx.AsyncClient) -> Provider:
        return TextScorer(make(spec, client))

    return replace(options, provider_factory=factory)


def _text_rule(store: Store, config: RunConfig) -> str | None:
    """The study's ``[probes] text``, its fields checked against the items' columns."""
    rule = config.study.probe_text
    columns = item_columns(store) if rule is not None else []
    return text_rule(rule, columns, f"{config.path}: [probes] text")


def _lane(store: Store, probe: TextProbe, spec: ModelSpec, params_hash: str, limit: int | None,
          rule: str | None) -> Lane:
    items = pending_items(store, probe, spec.name, params_hash, limit)
    tasks = (Task(item_id=item.item_id, model=spec.name, context=params_hash, tags=_TAGS,
                  request=_scoring_request(probe.text(item, rule))) for item in items)
    return Lane(spec=spec, total=len(items), tasks=tasks)


def _scoring_request(text: str) -> Request:
    """The text to score, as the engine carries it. Nothing is generated (a vLLM server makes one
    token): the output limit of 1 keeps the lane's token bucket from counting an answer's worth."""
    return Request(system="", user=text, max_output_tokens=1)


def pending_items(store: Store, probe: TextProbe, model: str, params_hash: str,
                  limit: int | None) -> list[ProbeItem]:
    """The items among the first ``limit`` (file order) without a ``probe.metric`` row of
    ``model`` under ``params_hash``. A list: a probe's items are few enough to hold (texts)."""
    rows = unscored_items(store, probe=probe.kind, metric=probe.metric, model=model,
                          params_sha256=params_hash, limit=limit)
    return [probe_item(row) for row in rows]


# -- scoring through the engine ------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class ScoredReply(Reply):
    """A reply whose content is a scored text, not a completion."""

    scored: TextLogprobs


class TextScorer(Provider):
    """A provider as the engine drives it, scoring instead of generating: ``generate(request)``
    returns the log-probabilities of ``request.user``'s tokens. Everything else (the served-model
    id, the preflight) is the wrapped provider's."""

    def __init__(self, provider: Provider) -> None:
        self.provider, self.spec = provider, provider.spec

    def served_model_id(self) -> str:
        return self.provider.served_model_id()

    async def preflight(self) -> str | None:
        return await self.provider.preflight()

    async def generate(self, request: Request) -> Reply:
        scored = await self.provider.text_logprobs(request.user)
        return ScoredReply(text="", served_model=scored.served_model,
                           input_tokens=scored.input_tokens, output_tokens=0,
                           http_status=scored.http_status, scored=scored)


def _accept(run_id: str, specs: Sequence[ModelSpec], probe: TextProbe) -> Accept:
    """What is kept of a scored text: the scores and the audit row, in one transaction."""
    by_label = {spec.name: spec for spec in specs}

    def accept(task: Task, reply: Reply, latency_s: float) -> Rows:
        assert isinstance(reply, ScoredReply)  # TextScorer's, by construction
        key = sample_key(run_id, probe.kind, task.context, task)
        scores = [{**key, "metric": s.metric, "value": s.value,
                   "detail": orjson.dumps(s.detail).decode()} for s in probe.scores(reply.scored)]
        sample = _sample_row(key, by_label[task.model], task, reply, latency_s)
        return {"probe_scores": scores, "probe_samples": [sample]}

    return accept


def _sample_row(key: dict[str, Any], spec: ModelSpec, task: Task, reply: ScoredReply,
                latency_s: float) -> dict[str, Any]:
    """The audit row of one scored text: which text (``prompt_sha256`` here is the hash of the
    scored text itself, not of a system and user turn), which model served it, every token's
    value."""
    row = sample_row(key, spec, reply, variant="tokens",
                     prompt_sha256=sha256_text(task.request.user), latency_s=latency_s)
    return {**row, "sample": 0, "input_tokens": reply.input_tokens, "output_tokens": 0,
            "detail": orjson.dumps(_audit(reply.scored)).decode()}


def _audit(scored: TextLogprobs) -> dict[str, Any]:
    """The per-token values to :data:`_DIGITS` significant digits (the scores are exact)."""
    def rounded(values: Sequence[float] | None) -> list[float | None] | None:
        return None if values is None else [
            float(f"{v:.{_DIGITS}g}") if math.isfinite(v) else None for v in values]

    return {"tokens": list(scored.tokens), "logprobs": rounded(scored.logprobs),
            "means": rounded(scored.means), "stds": rounded(scored.stds)}


# -- the end --------------------------------------------------------------------------------------

def _run_config(config: RunConfig, specs: Sequence[ModelSpec], probe: TextProbe,
                options: JobOptions, params: dict[str, dict]) -> dict[str, Any]:
    return {"config_file": str(config.path), "probe": probe.kind, "limit": options.limit,
            "params": params, "models": [spec.public_dict() for spec in specs]}


def _summarise(config: RunConfig, result: JobResult, kind: str, flags: str) -> None:
    again = config.command(f"probe {kind}") + flags
    result.summary += summary_lines(result.stats, "texts scored") + failure_lines(result.stats)
    if result.interrupted is not None:
        result.problems.append(interrupted_line(f"probe {kind}", result.interrupted, again, "score"))
        return
    if any(s.stopped or s.failed for s in result.stats):
        result.problems.append(f"contam probe {kind}: some texts were not scored; run `{again}` "
                               "again to score the rest")
