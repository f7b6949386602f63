"""What a probe asks and keeps, for :mod:`contam.harness.jobs.probe`: its plan over the items in scope,
the requests each model still owes (exactly the missing samples), the ``probe_samples`` rows of a
reply, and the ``probe_scores`` of every cell whose samples are all in.

Samples are numbered per (item, model, variant) from 0 to the prompt's ``samples`` - 1. A model
whose API has a multi-sample field gets the missing numbers of a prompt in as few requests as its
limit allows (OpenAI ``n`` up to 128, Gemini ``candidateCount`` up to 8, the local model's up to
128, or the model's ``samples_per_request``); the others one request per sample. A reply's
completions are stored under the numbers its request asked for, in order (a prompt blocked as a
whole is blank under every number asked). A reply with fewer completions than asked (a server
that ignores ``n``, as ``transformers serve`` does) leaves the rest to :class:`ShortReplies`,
which asks them one per request in a second pass of the same run and says so once per model.
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from contam.harness.config import ModelSpec
from contam.harness.engine.lanes import Lane, Task
from contam.harness.engine.writer import Rows
from contam.harness.store import Store, utc_now
from contam.harness.store.cells import Expected, complete_unscored, first_items, missing_samples, probe_texts
from contam.harness.text import normalise_answer, sha256_text
from contam.metrics.probes import GenerationProbe, ProbeItem, ProbePrompt, params_sha256
from contam.providers.base import Fatal, Reply, Request
from contam.providers.registry import provider_class
from contam.providers.traits import traits_of

__all__ = ["ProbePlan", "probe_item", "samples_per_request", "pending_tasks", "pending_count",
           "sample_rows", "sample_key", "sample_row", "score_complete", "record_params",
           "missing_count", "refusal", "ShortReplies", "parameter_flags"]


@dataclass(frozen=True)
class ProbePlan:
    """A probe over the items in scope: each item's prompts by variant, and what is expected of
    every model (``(item_id, variant, samples)`` in item order)."""

    probe: GenerationProbe
    params_sha256: str
    items: dict[str, ProbeItem]
    prompts: dict[str, dict[str, ProbePrompt]]
    expected: Expected

    @classmethod
    def build(cls, store: Store, probe: GenerationProbe, limit: int | None) -> "ProbePlan":
        items = {row[0]: probe_item(row) for row in first_items(store, limit)}
        prompts = {item_id: {p.variant: p for p in probe.prompts(item)}
                   for item_id, item in items.items()}
        expected = [row for item_id, by_variant in prompts.items()
                    for row in _expected(item_id, by_variant)]
        return cls(probe, params_sha256(probe.kind, probe.params()), items, prompts, expected)

    @property
    def samples_per_model(self) -> int:
        return sum(samples for _, _, samples in self.expected)


def probe_item(row: Sequence[str | None]) -> ProbeItem:
    """An item as a probe reads it, from an (item_id, title, subset, question, reference, extra)
    row of :mod:`contam.harness.store.cells`; a missing text is blank."""
    item_id, title, subset, question, reference, extra = row
    return ProbeItem(item_id=item_id, title=title or "", subset=subset or "",
                     question=question or "", reference=reference or "",
                     fields=orjson.loads(extra) if extra else {})


def _expected(item_id: str, prompts: dict[str, ProbePrompt]) -> list[tuple[str, str, int]]:
    """Each prompt's samples; an item asked nothing stands as one empty row (scored at once)."""
    return [(item_id, variant, p.samples) for variant, p in prompts.items()] or [(item_id, "", 0)]


def samples_per_request(spec: ModelSpec) -> int:
    """How many completions one request of this model carries: the provider's limit, lowered
    by the model's ``samples_per_request``."""
    limit = provider_class(spec).max_samples
    return min(limit, spec.samples_per_request or limit)


def pending_tasks(store: Store, plan: ProbePlan, spec: ModelSpec) -> list[Task]:
    """The requests ``spec`` still owes: each prompt's missing sample numbers, split by
    :func:`samples_per_request`, in item order."""
    per_request = samples_per_request(spec)
    return [_task(spec, item_id, plan.prompts[item_id][variant], chunk)
            for item_id, variant, numbers in _missing(store, plan, spec)
            for chunk in _chunks(numbers, per_request)]


def pending_count(store: Store, plan: ProbePlan, spec: ModelSpec) -> int:
    """How many requests :func:`pending_tasks` makes, without making them."""
    per_request = samples_per_request(spec)
    return sum(-(-len(numbers) // per_request) for _, _, numbers in _missing(store, plan, spec))


def _missing(store: Store, plan: ProbePlan, spec: ModelSpec) -> list[tuple[str, str, list[int]]]:
    return missing_samples(store, probe=plan.probe.kind,
                           params_sha256=plan.params_sha256, model=spec.name,
                           expected=plan.expected)


def _chunks(numbers: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(numbers), size):
        yield numbers[start:start + size]


def _task(spec: ModelSpec, item_id: str, prompt: ProbePrompt, numbers: list[int]) -> Task:
    request = Request(system=prompt.system, user=prompt.user,
                      max_output_tokens=prompt.max_output_tokens, temperature=prompt.temperature,
                      samples=len(numbers), sample_numbers=tuple(numbers))
    return Task(item_id=item_id, model=spec.name, request=request,
                tags={"variant": prompt.variant, "samples": numbers})


def refusal(plan: ProbePlan, spec: ModelSpec) -> Fatal | None:
    """Why ``spec`` cannot run this probe at all (a greedy-only model asked to sample), found
    before anything is sent; None when it can."""
    sampled = any(p.temperature for prompts in plan.prompts.values() for p in prompts.values())
    if sampled and not provider_class(spec).can_sample:
        return Fatal(f"model {spec.name!r}: {plan.probe.kind} samples at a temperature above 0, "
                     f"and {spec.provider} models decode greedily")
    return None


def missing_count(store: Store, plan: ProbePlan, spec: ModelSpec) -> int:
    """Samples ``spec`` still lacks."""
    return sum(len(numbers) for _, _, numbers in _missing(store, plan, spec))


# -- what is kept ------------------------------------------------------------------------------

def sample_rows(run_id: str, plan: ProbePlan, specs: Sequence[ModelSpec],
                short: "ShortReplies | None" = None) -> Callable[[Task, Reply, float], Rows]:
    """The accept hook of a probe: a ``probe_samples`` row per completion, numbered as the
    request's ``samples`` tag says. The request's token counts go on its first row only, so that
    sums over rows are right. The numbers a short reply left unanswered go to ``short``."""
    by_label = {spec.name: spec for spec in specs}

    def accept(task: Task, reply: Reply, latency_s: float) -> Rows:
        tags = task.tags or {}
        prompt = plan.prompts[task.item_id][tags["variant"]]
        common = sample_row(sample_key(run_id, plan.probe.kind, plan.params_sha256, task),
                            by_label[task.model], reply, variant=prompt.variant,
                            prompt_sha256=sha256_text(prompt.system + "\x00" + prompt.user),
                            latency_s=latency_s)
        completions = _completions(reply, len(tags["samples"]))
        rows = [{**common, "sample": number, "text_raw": text, "text": normalise_answer(text),
                 "finish_reason": reason, **_tokens(reply, first=n == 0)}
                for n, (number, (text, reason)) in enumerate(zip(tags["samples"], completions))]
        if short is not None:
            short.note(task, len(completions))
        return {"probe_samples": rows}

    return accept


class ShortReplies:
    """The sample numbers that replies left unanswered, per model: a server that ignores ``n``
    (or ``candidateCount``) sends one completion however many were asked for. What is noted here
    is asked again one sample per request, in a second pass of the same run (:meth:`lanes`)."""

    def __init__(self, plan: ProbePlan, specs: Sequence[ModelSpec]) -> None:
        self.plan = plan
        self.specs = list(specs)
        self.left: dict[str, list[tuple[str, str, int]]] = defaultdict(list)  # model -> cells
        self.first: dict[str, tuple[int, int]] = {}  # model -> (got, asked) of a first short reply

    def note(self, task: Task, got: int) -> None:
        numbers = list((task.tags or {})["samples"])
        if got >= len(numbers):
            return
        self.first.setdefault(task.model, (got, len(numbers)))
        variant = (task.tags or {})["variant"]
        self.left[task.model] += [(task.item_id, variant, number) for number in numbers[got:]]

    def lanes(self, notify: Callable[[str], None]) -> list[Lane]:
        """A lane per model with samples left: one request per sample; said once per model."""
        lanes = []
        for spec in self.specs:
            left = self.left.pop(spec.name, [])
            if left:
                notify(self._message(spec, len(left)))
                tasks = [_task(spec, item_id, self.plan.prompts[item_id][variant], [number])
                         for item_id, variant, number in left]
                lanes.append(Lane(spec=spec, tasks=tasks, total=len(tasks)))
        return lanes

    def _message(self, spec: ModelSpec, count: int) -> str:
        got, asked = self.first[spec.name]
        field = traits_of(spec.provider).samples_field or "the samples field"
        return (f"{spec.name}: the server ignores {field} (a reply held {got} of the {asked} "
                f"completions asked); asking the {count} samples left one per request")


def _completions(reply: Reply, asked: int) -> tuple[tuple[str, str | None], ...]:
    """The reply's completions; a prompt blocked as a whole (Gemini's ``blocked:`` reason, no
    candidate at all) blocks every candidate asked, so its blank completion stands for each:
    asking again gets the same verdict."""
    completions = reply.completions()
    if not reply.texts and (reply.finish_reason or "").startswith("blocked:"):
        return completions * asked
    return completions


def sample_key(run_id: str, probe: str, params_sha256: str, task: Task) -> dict[str, Any]:
    """What names a probe's rows of one task: run, probe, parameters, cell; and when."""
    return {"run_id": run_id, "probe": probe, "params_sha256": params_sha256,
            "item_id": task.item_id, "model": task.model, "created_at": utc_now()}


def sample_row(key: dict[str, Any], spec: ModelSpec, reply: Reply, *, variant: str,
               prompt_sha256: str, latency_s: float) -> dict[str, Any]:
    """What every ``probe_samples`` row of a reply holds besides its sample: ``key``
    (:func:`sample_key`), the prompt (``prompt_sha256``: the hash of what the probe sent, as
    the probe defines it), who served it and how long it took."""
    return {**key, "variant": variant, "provider": spec.provider, "provider_model": spec.model,
            "served_model": reply.served_model, "prompt_sha256": prompt_sha256,
            "latency_s": latency_s}


def parameter_flags(parameters: dict[str, Any]) -> str:
    """A probe's parameter flags as a shell reads them back (``--dataset 'My Bench'``), for the
    command line that resumes it."""
    return "".join(f" --{name.replace('_', '-')} {shlex.quote(str(value))}"
                   for name, value in parameters.items())


def _tokens(reply: Reply, *, first: bool) -> dict[str, int | None]:
    if not first:
        return {}
    return {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens}


def record_params(store: Store, probe: str, params: dict[str, dict[str, Any]]) -> None:
    """A ``probe_params`` row for each parameter set (by its hash) the store does not have yet:
    a rerun with the same ones adds nothing."""
    known = {row[0] for row in store.query(
        "SELECT params_sha256 FROM probe_params WHERE probe = ?", [probe])}
    store.append("probe_params", [{"params_sha256": sha, "probe": probe, "created_at": utc_now(),
                                   "params": orjson.dumps(p).decode()}
                                  for sha, p in params.items() if sha not in known])


# -- scoring -----------------------------------------------------------------------------------

def score_complete(store: Store, plan: ProbePlan, run_id: str, models: Sequence[str]) -> int:
    """Score every cell of ``models`` whose samples are all in and that has no score newer than
    them, in one transaction; returns how many cells were scored."""
    cells = complete_unscored(store, probe=plan.probe.kind, params_sha256=plan.params_sha256,
                              models=models, expected=plan.expected)
    if not cells:
        return 0
    texts = _texts(store, plan, cells)
    now = utc_now()
    rows = [_score_row(run_id, plan, item_id, model, score, now)
            for item_id, model in cells
            for score in plan.probe.score(plan.items[item_id], texts[(item_id, model)])]
    with store.transaction():
        store.append("probe_scores", rows)
    return len(cells)


def _texts(store: Store, plan: ProbePlan, cells: Sequence[tuple[str, str]]
           ) -> dict[tuple[str, str], dict[str, list[str]]]:
    """Each cell's texts by variant, in sample order, within what the plan expects."""
    wanted = {(item, variant): samples for item, variant, samples in plan.expected}
    texts: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    rows = probe_texts(store, probe=plan.probe.kind, params_sha256=plan.params_sha256,
                       models=sorted({model for _, model in cells}),
                       items=sorted({item for item, _ in cells}))
    for item_id, model, variant, sample, text in rows:
        if sample < wanted.get((item_id, variant), 0):
            texts[(item_id, model)][variant].append(text or "")
    return texts


def _score_row(run_id: str, plan: ProbePlan, item_id: str, model: str, score: Any,
               now: Any) -> dict[str, Any]:
    detail = orjson.dumps(score.detail).decode() if score.detail is not None else None
    return {"run_id": run_id, "probe": plan.probe.kind, "params_sha256": plan.params_sha256,
            "item_id": item_id, "model": model, "metric": score.metric, "value": score.value,
            "detail": detail, "created_at": now}
