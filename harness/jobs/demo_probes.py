"""``contam demo --probes``: every registered probe (:data:`metrics.probe_registry.PROBES`) on two
emulated models that know the demo items, one ``contaminated`` and one ``clean``
(:mod:`harness.emulator.knowledge`), into the demo's store, before the report is written.

Each model is served by an in-process loopback emulator of its own (the contaminated one speaks
OpenAI's protocol, so cdd's samples go as ``n``; the clean one Gemini's, ``candidateCount``), so
the report's probes section shows what each probe sees on a model that memorised the documented
items and on one that memorised nothing. min-k, which needs prompt log-probabilities, scores the
OpenAI-protocol model (served as vLLM serves them) and a third, clean one of that protocol. The emulators accept any key: the models name a
variable of the demo's own, set to a placeholder, and nothing leaves the machine.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import anyio

from harness.config import ModelSpec, RunConfig
from harness.emulator.knowledge import Knowledge
from harness.emulator.server import EmulatorSettings, run_emulator
from harness.jobs.lane_job import JobResult
from harness.jobs.probe import ProbeOptions, execute_probe, make_probe
from harness.store import Store
from harness.store.probe_scores import probe_score_means
from metrics.probe_registry import PROBES

__all__ = ["demo_probes", "EMULATED_MODELS", "MIN_K_CLEAN", "KEY_ENV"]

KEY_ENV = "CONTAM_DEMO_EMULATOR_KEY"
_PLACEHOLDER_KEY = "demo-emulator-accepts-any-key"
# label -> (knowledge profile, protocol)
EMULATED_MODELS = {"emulated-contaminated": ("contaminated", "openai"),
                   "emulated-clean": ("clean", "gemini")}
# min-k needs prompt log-probabilities, which the Gemini protocol has not: its clean model is this.
MIN_K_CLEAN = "emulated-clean-vllm"


def demo_probes(store: Store, items: Path, system_prompt: str, *, no_progress: bool) -> int:
    """Run every probe on both emulated models; returns the worst exit status."""
    os.environ.setdefault(KEY_ENV, _PLACEHOLDER_KEY)
    with contextlib.ExitStack() as stack:
        specs = tuple(_spec(label, profile, protocol, stack, items)
                      for label, (profile, protocol) in EMULATED_MODELS.items())
        config = RunConfig(path=store.path.parent / "probes (in-process emulators)", store=store.path,
                           items=None, system_prompt=system_prompt, models=specs, judge=None)
        status = max(_probe(store, config, kind, no_progress) for kind in PROBES)
        status = max(status, _min_k(store, config, items, stack, no_progress))
    _print_means(store)
    return status


def _spec(label: str, profile: str, protocol: str, stack: contextlib.ExitStack,
          items: Path) -> ModelSpec:
    knowledge = Knowledge.from_file(items, profile=profile, seed=0)
    emulator = stack.enter_context(run_emulator(EmulatorSettings(knowledge=knowledge, record=False)))
    return ModelSpec(name=label, provider=protocol, model=f"emulated-{profile}",
                     base_url=emulator.base_url(protocol), api_key_env=KEY_ENV, concurrency=16,
                     timeout_s=30)


def _probe(store: Store, config: RunConfig, kind: str, no_progress: bool) -> int:
    print(f"\nprobe {kind}: {PROBES[kind].summary}", flush=True)
    options = ProbeOptions(no_progress=no_progress)
    result = anyio.run(execute_probe, store, config, config.models, make_probe(kind, config, {}),
                       options)
    return _printed(result)


def _min_k(store: Store, config: RunConfig, items: Path, stack: contextlib.ExitStack,
           no_progress: bool) -> int:
    """min-k on the emulated models whose protocol gives prompt log-probabilities (OpenAI's, as
    vLLM serves it), and on a clean one of the same protocol: the Gemini model has none."""
    from harness.jobs.probe_mink import MinKOptions, execute_min_k, refusals

    able = [spec for spec in config.models if not refusals([spec])]
    able.append(_spec(MIN_K_CLEAN, "clean", "openai", stack, items))
    print(f"\nprobe min-k: Min-K% of each item's text on {', '.join(s.name for s in able)} "
          "(the Gemini model gives no log-probabilities)", flush=True)
    return _printed(anyio.run(execute_min_k, store, config, able,
                              MinKOptions(no_progress=no_progress)))


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
