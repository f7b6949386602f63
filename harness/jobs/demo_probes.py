"""``contam demo --probes``: every registered probe (:data:`contam.metrics.probe_registry.PROBES`) on two
emulated models that know the demo items, one ``contaminated`` and one ``clean``
(:mod:`contam.harness.emulator.knowledge`), into the demo's store, before the report is written.

Each model is served by an in-process loopback emulator of its own (the contaminated one speaks
OpenAI's protocol, so cdd's samples go as ``n``; the clean one Gemini's, ``candidateCount``), so
the report's probes section shows what each probe sees on a model that memorised the documented
items and on one that memorised nothing. A probe on token log-probabilities (min-k) scores the
OpenAI-protocol model (served as vLLM serves them) and a third, clean one of that protocol, since
the Gemini protocol gives none. The emulators accept any key: the models name a variable of the
demo's own, set to a placeholder, and nothing leaves the machine.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import anyio

from contam.harness.config import ModelSpec, RunConfig
from contam.harness.emulator.knowledge import Knowledge
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.jobs.lane_job import JobResult
from contam.harness.jobs.probe import ProbeOptions, execute_probe, make_probe
from contam.harness.jobs.probe_text import refusals
from contam.harness.store import Store
from contam.harness.store.probe_scores import probe_score_means
from contam.metrics.probe_registry import PROBES, TEXT_LOGPROBS

__all__ = ["demo_probes", "EMULATED_MODELS", "MIN_K_CLEAN", "KEY_ENV"]

KEY_ENV = "CONTAM_DEMO_EMULATOR_KEY"
_PLACEHOLDER_KEY = "demo-emulator-accepts-any-key"
# label -> (knowledge profile, protocol)
EMULATED_MODELS = {"emulated-contaminated": ("contaminated", "openai"),
                   "emulated-clean": ("clean", "gemini")}
# A probe on log-probabilities needs them, which the Gemini protocol has not: its clean model.
MIN_K_CLEAN = "emulated-clean-vllm"


def demo_probes(store: Store, items: Path, system_prompt: str, *, no_progress: bool) -> int:
    """Run every probe on both emulated models; returns the worst exit status."""
    os.environ.setdefault(KEY_ENV, _PLACEHOLDER_KEY)
    with contextlib.ExitStack() as stack:
        specs = tuple(_spec(label, profile, protocol, stack, items)
                      for label, (profile, protocol) in EMULATED_MODELS.items())
        config = RunConfig(path=store.path.parent / "probes (in-process emulators)", store=store.path,
                           items=None, system_prompt=system_prompt, models=specs, judge=None)
        logprob_clean = _spec(MIN_K_CLEAN, "clean", "openai", stack, items)
        status = max(_probe(store, config, kind, _models(config, kind, logprob_clean), no_progress)
                     for kind in PROBES)
    _print_means(store)
    return status


def _spec(label: str, profile: str, protocol: str, stack: contextlib.ExitStack,
          items: Path) -> ModelSpec:
    knowledge = Knowledge.from_file(items, profile=profile, seed=0)
    emulator = stack.enter_context(run_emulator(EmulatorSettings(knowledge=knowledge, record=False)))
    return ModelSpec(name=label, provider=protocol, model=f"emulated-{profile}",
                     base_url=emulator.base_url(protocol), api_key_env=KEY_ENV, concurrency=16,
                     timeout_s=30)


def _models(config: RunConfig, kind: str, logprob_clean: ModelSpec) -> tuple[ModelSpec, ...]:
    """The emulated models ``kind`` runs on: all of them, or for a probe on log-probabilities
    those that give them and the clean model of the OpenAI protocol."""
    if PROBES[kind].runs != TEXT_LOGPROBS:
        return config.models
    return (*(spec for spec in config.models if not refusals([spec])), logprob_clean)


def _probe(store: Store, config: RunConfig, kind: str, models: tuple[ModelSpec, ...],
           no_progress: bool) -> int:
    print(f"\nprobe {kind}: {PROBES[kind].summary} (on {', '.join(s.name for s in models)})",
          flush=True)
    options = ProbeOptions(no_progress=no_progress)
    result = anyio.run(execute_probe, store, config, models, make_probe(kind, config, {}), options)
    return _printed(result)


def _printed(result: JobResult) -> int:
    """A probe's summary, indented under its heading; its problems on stderr; its exit status."""
    for line in result.summary:
        print(f"  {line}")
    for line in result.problems:
        print(line, file=sys.stderr)
    return result.exit_status


def _print_means(store: Store) -> None:
    """Each probe's scores, averaged per model and subset: where the two profiles part ways."""
    rows = probe_score_means(store, [*EMULATED_MODELS, MIN_K_CLEAN])
    print("\nprobe scores per model and subset (mean over items; flagged / exact_match: a share):")
    for probe, metric, model, subset, mean, n in rows:
        print(f"  {probe:<9} {metric:<16} {model:<22} {subset:<9} {mean:7.3f}  (n={n})")
