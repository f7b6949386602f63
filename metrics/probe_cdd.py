"""CDD: Contamination Detection via output Distribution (Dong et al., 2024, arXiv 2402.15938).

Design notes: ARCHITECTURE.md, Probe: CDD.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from contam.metrics.probes import ProbeContext, ProbeItem, ProbePrompt, ProbeScore
from contam.metrics.template import fill_template

__all__ = ["build", "CDDProbe", "Peak", "peakedness", "tokens", "COMPARED_TOKENS", "TOKEN_PATTERN",
           "BLANK_GREEDY"]

MAX_SAMPLES = 1000  # per item: above it, one mistyped zero would queue a fortune

COMPARED_TOKENS = 100
TOKEN_PATTERN = r"\w+|[^\w\s]"
_TOKEN = re.compile(TOKEN_PATTERN)
BLANK_GREEDY = "blank greedy answer: nothing to measure the samples against"


def tokens(text: str) -> list[str]:
    """The compared tokens of ``text``: words and single punctuation marks, case kept."""
    return _TOKEN.findall(unicodedata.normalize("NFC", text))[:COMPARED_TOKENS]


@dataclass(frozen=True)
class Peak:
    """One cell's measurement: each sample's distance to the greedy answer, the length they are
    measured against, and the fraction within ``alpha`` of it (None when the greedy answer is
    blank, or there are no samples)."""

    distances: list[int]
    max_length: int
    threshold: float
    peakedness: float | None


def peakedness(greedy: str, samples: Sequence[str], alpha: float) -> Peak:
    """The paper's Peak(M; x) of one cell (see the module docstring)."""
    from rapidfuzz.distance import Levenshtein

    reference = tokens(greedy)
    sampled = [tokens(sample) for sample in samples]
    max_length = max([len(reference), *(len(s) for s in sampled)])
    distances = [Levenshtein.distance(reference, s) for s in sampled]
    threshold = alpha * max_length
    if not reference or not distances:
        return Peak(distances, max_length, threshold, None)
    close = sum(distance <= threshold for distance in distances)
    return Peak(distances, max_length, threshold, close / len(distances))


@dataclass(frozen=True, kw_only=True)
class CDDProbe:
    """The cdd probe: two prompts per item (the greedy answer, N samples), two scores per cell
    (``peakedness`` and ``flagged``). ``system`` and ``question_template`` are the study's own
    prompt (the run config's), so the probe samples answers to the very question ``contam run``
    asks."""

    kind: ClassVar[str] = "cdd"
    system: str
    question_template: str
    samples: int = 20
    temperature: float = 0.8
    alpha: float = 0.05
    xi: float = 0.01
    max_output_tokens: int = 128

    def __post_init__(self) -> None:
        if not 1 <= self.samples <= MAX_SAMPLES:
            raise ValueError(f"--samples must be from 1 to {MAX_SAMPLES:,}, not {self.samples:,}: "
                             "each sample is a completion paid for, per item and model")
        if not 0 < self.temperature <= 2:
            raise ValueError(f"--temperature must be above 0 and at most 2, not {self.temperature}")
        if not 0 <= self.alpha <= 1:
            raise ValueError(f"--alpha must be between 0 and 1, not {self.alpha}")
        if not 0 <= self.xi < 1:
            raise ValueError(f"--xi must be at least 0 and below 1, not {self.xi}")
        if self.max_output_tokens < 1:
            raise ValueError(f"--max-output-tokens must be at least 1, not {self.max_output_tokens}")

    def params(self) -> dict[str, Any]:
        return {"samples": self.samples, "temperature": self.temperature, "alpha": self.alpha,
                "xi": self.xi, "max_output_tokens": self.max_output_tokens,
                "compared_tokens": COMPARED_TOKENS, "token_pattern": TOKEN_PATTERN,
                "system": self.system, "question_template": self.question_template}

    def prompts(self, item: ProbeItem) -> Sequence[ProbePrompt]:
        user = fill_template(self.question_template, item.values)  # the paper's: str.format's bytes
        common = {"system": self.system, "user": user, "max_output_tokens": self.max_output_tokens}
        return [ProbePrompt(variant="greedy", samples=1, temperature=0.0, **common),
                ProbePrompt(variant="sample", samples=self.samples, temperature=self.temperature,
                            **common)]

    def score(self, item: ProbeItem, texts: Mapping[str, Sequence[str]]) -> Sequence[ProbeScore]:
        peak = peakedness(texts["greedy"][0], texts["sample"], self.alpha)
        detail = {"distances": peak.distances, "max_length": peak.max_length,
                  "threshold": peak.threshold}
        reason = {} if peak.peakedness is not None else \
            {"reason": BLANK_GREEDY if not tokens(texts["greedy"][0]) else "no samples"}
        flagged = None if peak.peakedness is None else float(peak.peakedness > self.xi)
        return [ProbeScore(metric="peakedness", value=peak.peakedness, detail={**detail, **reason}),
                ProbeScore(metric="flagged", value=flagged, detail={"xi": self.xi, **reason})]


def build(context: ProbeContext, **options: Any) -> CDDProbe:
    """The registry's builder: cdd samples answers to the study's own prompt."""
    return CDDProbe(system=context.system_prompt, question_template=context.question_template,
                    **options)
