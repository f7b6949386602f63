"""The generation probes ``contam probe KIND`` knows, in one place: how each is built and which of
its parameters the command line sets (``contam probe cdd CONFIG --samples 20``).

A probe is built from the study's own prompt (:class:`ProbeContext`: the run config's system
prompt and the question template of ``contam run``) and its options, each a flag of its own. Adding
a probe is one entry in :data:`PROBES`; the job, the command line and ``contam demo --probes``
find it there. Light to import: the command line reads it to build its parser, so each probe's
module (rapidfuzz, wordfreq, BLEU's numpy) is imported only when that probe is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from metrics.probes import DEFAULT_DATASET, DEFAULT_SPLIT, GenerationProbe

__all__ = ["ProbeOption", "ProbeContext", "ProbeKind", "PROBES", "build_probe"]


@dataclass(frozen=True)
class ProbeOption:
    """One parameter of a probe, set by ``--NAME`` (underscores as dashes)."""

    name: str
    type: type
    default: Any
    help: str

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class ProbeContext:
    """What a probe may take from the study: the prompt ``contam run`` asks with."""

    system_prompt: str
    question_template: str  # "Game: {title}\nQuestion: {question}", or the study's [prompt] user
    own_template: bool = False  # the study's own template, not the paper's


@dataclass(frozen=True)
class ProbeKind:
    """A registered probe: one line for ``--help``, its options, and ``build(context, **options)``."""

    summary: str
    options: tuple[ProbeOption, ...]
    build: Callable[..., GenerationProbe]


def _cdd(context: ProbeContext, **options: Any) -> GenerationProbe:
    from metrics.probe_cdd import CDDProbe

    return CDDProbe(system=context.system_prompt, question_template=context.question_template,
                    **options)


def _ts_guess(context: ProbeContext, **options: Any) -> GenerationProbe:
    from metrics.probe_tsguess import TsGuessProbe

    # its own prompt (the paper's); a word of the study's {question} field is masked
    return TsGuessProbe(**options, masked_field="question" if context.own_template else None)


def _guided(context: ProbeContext, **options: Any) -> GenerationProbe:
    from metrics.probe_guided import GuidedProbe

    return GuidedProbe(**options)  # its own instructions (the paper's), not the study's


PROBES: dict[str, ProbeKind] = {
    "cdd": ProbeKind(
        summary="output peakedness: one greedy answer and N samples per item (Dong et al. 2024)",
        options=(
            ProbeOption("samples", int, 20, "samples per item at --temperature (default 20, "
                        "at most 1,000)"),
            ProbeOption("temperature", float, 0.8, "sampling temperature (default 0.8)"),
            ProbeOption("alpha", float, 0.05,
                        "a sample is close when its token edit distance to the greedy answer is "
                        "at most alpha x the longest length (default 0.05)"),
            ProbeOption("xi", float, 0.01,
                        "an item is flagged when more than this fraction of its samples is close "
                        "(default 0.01)"),
            ProbeOption("max_output_tokens", int, 128, "output limit of each answer (default 128)"),
        ),
        build=_cdd),
    "ts-guess": ProbeKind(
        summary="testset slot guessing: mask the question's rarest content word, ask for it "
                "(Deng et al. 2023)",
        options=(
            ProbeOption("max_output_tokens", int, 16, "output limit of each reply (default 16)"),
        ),
        build=_ts_guess),
    "guided": ProbeKind(
        summary="guided vs general instruction: complete the question's first half with and "
                "without naming the benchmark (Golchin & Surdeanu 2023)",
        options=(
            ProbeOption("dataset", str, DEFAULT_DATASET,
                        "the benchmark's name in the guided instruction, as it is publicly known "
                        f"(default {DEFAULT_DATASET!r})"),
            ProbeOption("split", str, DEFAULT_SPLIT,
                        f"the split the guided instruction names (default {DEFAULT_SPLIT!r})"),
            ProbeOption("max_output_tokens", int, 64, "output limit of each completion (default 64)"),
        ),
        build=_guided),
}


def build_probe(kind: str, context: ProbeContext, options: Mapping[str, Any]) -> GenerationProbe:
    """The probe ``kind`` with the given options (the others at their defaults); ValueError
    for an unknown kind or option, or an option out of range."""
    entry = PROBES.get(kind)
    if entry is None:
        raise ValueError(f"unknown probe {kind!r} (one of {', '.join(PROBES)})")
    known = {option.name for option in entry.options}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"{kind} has no parameter {unknown[0]!r}")
    chosen = {option.name: options.get(option.name, option.default) for option in entry.options}
    return entry.build(context, **chosen)
