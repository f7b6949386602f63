"""Every contamination probe, in one place: :data:`PROBES`, a :class:`ProbeSpec` per probe.

A spec is the whole slice of its probe: its options (each a flag of ``contam probe KIND``), how it
runs (:data:`REQUESTS` through the lanes of ``contam run``, or :data:`TEXT_LOGPROBS`, each item's
text scored by token log-probabilities), the builder of its scorer, and its report part, figures
and tidy tables. Those are named by dotted path (``"contam.harness.report.parts.probe_cdd:section"``) and
imported only when used (:func:`resolve`): the command line reads this module to build its parser,
and ``metrics/`` imports nothing above it. The command line, the jobs, ``contam demo --probes`` and
the report all walk :data:`PROBES`; adding a probe is one entry here and its module(s). See
ARCHITECTURE.md, Where an addition goes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contam.metrics.metric_registry import resolve
from contam.metrics.probes import DEFAULT_DATASET, DEFAULT_SPLIT, ProbeContext

__all__ = ["ProbeOption", "ProbeContext", "ProbeFigure", "ProbeMeasure", "ProbeSpec", "PROBES", "REQUESTS",
           "TEXT_LOGPROBS", "build_probe", "probe_spec", "resolve"]

# How a probe runs: what its job sends each model.
REQUESTS = "requests"  # prompts, whose completions it scores (contam.metrics.probes.GenerationProbe)
TEXT_LOGPROBS = "text_logprobs"  # each item's text, scored by log-probabilities (TextProbe)


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
class ProbeFigure:
    """One figure of a probe's report part: its file name, and the dotted paths of its drawing
    function (``report -> matplotlib Figure``) and its caption (a string)."""

    name: str
    draw: str
    caption: str


@dataclass(frozen=True)
class ProbeMeasure:
    """One of a probe's stored metrics that the planted-contamination validation reads: its name
    in the report, how a planted vs not-planted comparison of it is read (``auc``: ROC-AUC;
    ``share``: a rate each side; ``difference``: means each side and the AUC), and its declared
    direction: whether contamination raises it (``higher``) or lowers it (``lower``); the
    validation's AUC reads the scores that way round."""

    metric: str
    label: str
    reading: str = "auc"
    direction: str = "higher"

    def __post_init__(self) -> None:
        if self.direction not in ("higher", "lower"):
            raise ValueError(f"{self.metric}: direction must be 'higher' or 'lower'")


@dataclass(frozen=True)
class ProbeSpec:
    """A registered probe. ``build``: ``(ProbeContext, **options) -> probe`` (a
    GenerationProbe or a TextProbe, as ``runs`` says). ``part``: ``(store, contrast) -> dict |
    None``, ``report["probes"][name]``; ``section``: ``(part, report) -> Section``; ``tidy``:
    ``part -> {table name: rows}``; ``p_values``: (the part's list of rows, its p column) for
    Holm's correction within each model's probe family, or None; ``measures``: what the probe
    validation (contam.harness.report.parts.validation) compares on planted and not-planted items;
    ``not_applicable``: ``(store, part) -> {model: reason}``, the models the probe cannot work on
    (its measures there are shown with the reason, not as a score; ``part``: the probe's part of
    the report when it was built, else None), or None."""

    name: str
    summary: str  # one line for ``contam probe --help``
    options: tuple[ProbeOption, ...]
    build: str
    part: str
    section: str
    tidy: str
    figures: tuple[ProbeFigure, ...] = ()
    p_values: tuple[str, str] | None = None
    runs: str = REQUESTS
    measures: tuple[ProbeMeasure, ...] = ()
    not_applicable: str | None = None

    @property
    def batchable(self) -> bool:
        """Whether ``--batch`` applies: a probe of requests can go as provider batch jobs."""
        return self.runs == REQUESTS


def _report_part(module: str) -> dict[str, str]:
    """A probe's report hooks when one module holds them all: its build, section and tidy."""
    return {"part": f"{module}:build", "section": f"{module}:section", "tidy": f"{module}:tidy"}


def _max_tokens(default: int, what: str) -> ProbeOption:
    return ProbeOption("max_output_tokens", int, default, f"output limit of each {what} "
                       f"(default {default})")


_CDD = ProbeSpec(
    name="cdd",
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
        _max_tokens(128, "answer"),
    ),
    build="contam.metrics.probe_cdd:build",
    **_report_part("contam.harness.report.parts.probe_cdd"),
    figures=(ProbeFigure("fig_probe_cdd", "contam.harness.report.plots.probe_cdd:flagged_shares",
                         "contam.harness.report.plots.probe_cdd:CAPTION"),),
    p_values=("contrast", "fisher_p"),
    measures=(ProbeMeasure("peakedness", "cdd peakedness"),
              ProbeMeasure("flagged", "cdd flagged", "share")))

_TS_GUESS = ProbeSpec(
    name="ts-guess",
    summary="testset slot guessing: mask the question's rarest content word, ask for it "
            "(Deng et al. 2023)",
    options=(_max_tokens(16, "reply"),),
    build="contam.metrics.probe_tsguess:build",
    **_report_part("contam.harness.report.parts.probe_tsguess"),
    figures=(ProbeFigure("fig_probe_tsguess", "contam.harness.report.plots.probe_bars:exact_match_rates",
                         "contam.harness.report.plots.probe_bars:TSGUESS_CAPTION"),),
    p_values=("tests", "fisher_p"),
    measures=(ProbeMeasure("exact_match", "ts-guess exact match", "share"),),
    not_applicable="contam.harness.report.parts.probe_tsguess:not_applicable")

_GUIDED = ProbeSpec(
    name="guided",
    summary="guided vs general instruction: complete the question's first half with and "
            "without naming the benchmark (Golchin & Surdeanu 2023)",
    options=(
        # None: the study's [study] name, else DEFAULT_DATASET (contam.metrics.probe_guided.build)
        ProbeOption("dataset", str, None,
                    "the benchmark's name in the guided instruction, as it is publicly known "
                    f"(default: the study's [study] name, else {DEFAULT_DATASET!r})"),
        ProbeOption("split", str, DEFAULT_SPLIT,
                    f"the split the guided instruction names (default {DEFAULT_SPLIT!r})"),
        _max_tokens(64, "completion"),
    ),
    build="contam.metrics.probe_guided:build",
    **_report_part("contam.harness.report.parts.probe_guided"),
    figures=(ProbeFigure("fig_probe_guided", "contam.harness.report.plots.probe_bars:guided_differences",
                         "contam.harness.report.plots.probe_bars:GUIDED_CAPTION"),),
    p_values=("differences", "p"),
    # every score it stores: a leak raises each overlap with the true rest, and the guided one
    # more than the general one
    measures=(ProbeMeasure("rouge_l_guided", "guided ROUGE-L (guided)"),
              ProbeMeasure("rouge_l_general", "guided ROUGE-L (general)"),
              ProbeMeasure("rouge_l_diff", "guided ROUGE-L difference", "difference"),
              ProbeMeasure("bleu2_guided", "guided BLEU-2 (guided)"),
              ProbeMeasure("bleu2_general", "guided BLEU-2 (general)"),
              ProbeMeasure("bleu2_diff", "guided BLEU-2 difference", "difference")))

_MIN_K = ProbeSpec(
    name="min-k",
    summary="Min-K% and Min-K%++ of each item's text (models with token log-probabilities: "
            "local, vLLM)",
    options=(ProbeOption("k", float, 0.2, "the fraction of least likely tokens averaged "
                         "(default 0.2)"),),
    build="contam.metrics.probe_mink:build",
    **_report_part("contam.harness.report.parts.probe_mink"),
    figures=(ProbeFigure("fig_probe_min_k", "contam.harness.report.plots.probe_mink:distributions",
                         "contam.harness.report.plots.probe_mink:CAPTION"),),
    p_values=("rows", "mannwhitney_p"),
    runs=TEXT_LOGPROBS,
    measures=(ProbeMeasure("min_k", "Min-K%"), ProbeMeasure("min_k_pp", "Min-K%++")))

PROBES: dict[str, ProbeSpec] = {spec.name: spec for spec in (_CDD, _TS_GUESS, _GUIDED, _MIN_K)}


def probe_spec(kind: str) -> ProbeSpec:
    """The spec of ``kind``; ValueError naming the known ones for an unknown kind."""
    spec = PROBES.get(kind)
    if spec is None:
        raise ValueError(f"unknown probe {kind!r} (one of {', '.join(PROBES)})")
    return spec


def build_probe(kind: str, context: ProbeContext, options: Mapping[str, Any]) -> Any:
    """The probe ``kind`` with the given options (the others at their defaults); ValueError
    for an unknown kind or option, or an option out of range."""
    spec = probe_spec(kind)
    known = {option.name for option in spec.options}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"{kind} has no parameter {unknown[0]!r}")
    chosen = {option.name: options.get(option.name, option.default) for option in spec.options}
    return resolve(spec.build)(context, **chosen)
