"""Min-K% and Min-K%++: how likely a model finds the least likely tokens of a text. Pure: the
log-probabilities come from a provider (``contam.providers.base.TextLogprobs``), the rows are the job's.

Design notes: ARCHITECTURE.md, Probe: min-k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from contam.metrics.probes import ProbeContext, ProbeItem, ProbeScore
from contam.metrics.template import fill_template
from contam.providers.base import TextLogprobs

__all__ = ["build", "MinKProbe", "KIND", "DEFAULT_K", "TEXT_RULE", "METRICS", "scored_text", "min_k", "min_k_pp",
           "standardised", "lowest_count", "probe_params", "probe_scores", "check_k"]

KIND = "min-k"
DEFAULT_K = 0.2
TEXT_RULE = "title + '\\n' + question + '\\n' + reference (each stripped)"
METRICS = ("min_k", "min_k_pp")


def scored_text(item: ProbeItem, rule: str | None = None) -> str:
    """The text whose tokens are scored: :data:`TEXT_RULE`, or the study's template ``rule``."""
    if rule is not None:
        return fill_template(rule, item.values)
    return "\n".join(part.strip() for part in (item.title, item.question, item.reference))


def check_k(k: float) -> float:
    """k as a fraction in (0, 1]; ValueError otherwise."""
    if not (isinstance(k, int | float) and math.isfinite(k) and 0 < k <= 1):
        raise ValueError(f"k must be a fraction in (0, 1], not {k!r}")
    return float(k)


def lowest_count(n: int, k: float) -> int:
    """How many of n scored tokens are "the lowest k%": floor(n * k), as the reference code."""
    return int(n * check_k(k))


def _mean_of_lowest(values: Sequence[float], k: float) -> float | None:
    count = lowest_count(len(values), k)
    if count == 0:
        return None
    return math.fsum(sorted(values)[:count]) / count


def min_k(logprobs: Sequence[float], k: float = DEFAULT_K) -> float | None:
    """Min-K% Prob: the mean of the lowest ``floor(n * k)`` token log-probabilities; None when
    that is zero tokens."""
    return _mean_of_lowest(logprobs, k)


def standardised(logprobs: Sequence[float], means: Sequence[float],
                 stds: Sequence[float]) -> list[float]:
    """Each token's ``(log p - mu) / sigma`` (Min-K%++'s per-token score). A distribution with
    all its mass on one token has sigma 0 (and that token log p = mu = 0): its value is 0, where
    the reference code would divide 0 by 0."""
    if not len(logprobs) == len(means) == len(stds):
        raise ValueError("logprobs, means and stds must have one value per scored token")
    return [(lp - mu) / sd if sd > 0 else 0.0 for lp, mu, sd in zip(logprobs, means, stds)]


def min_k_pp(logprobs: Sequence[float], means: Sequence[float], stds: Sequence[float],
             k: float = DEFAULT_K) -> float | None:
    """Min-K%++: the mean of the lowest ``floor(n * k)`` standardised token log-probabilities."""
    return _mean_of_lowest(standardised(logprobs, means, stds), k)


# -- the probe's parameters and rows ------------------------------------------------------------

# How the log-probabilities were obtained: a local forward pass sees the whole vocabulary; a
# server's prompt_logprobs gives each token's own log-probability but only the top few others.
SOURCES = {
    "forward": ("one forward pass in-process: log-softmax over the whole vocabulary gives each "
                "token's log p and the mu and sigma of Min-K%++, in float32 (about 2e-5 from a "
                "float64 computation)"),
    "prompt_logprobs": ("the server's prompt_logprobs (vLLM): each token's own log p only; "
                        "Min-K%++ is not computed (its mu and sigma need the whole next-token "
                        "distribution, which a server returns only as its top alternatives)"),
}


def probe_params(k: float, source: str, rule: str | None = None) -> dict[str, Any]:
    """What the rows of one model are keyed by (``probe_params`` / ``params_sha256``); ``text``
    is the study's ``[probes] text`` template where it has one."""
    if source not in SOURCES:
        raise ValueError(f"unknown log-probability source {source!r}")
    metrics = list(METRICS) if source == "forward" else ["min_k"]
    return {"k": check_k(k), "text": rule or TEXT_RULE, "logprobs": source, "method": SOURCES[source],
            "metrics": metrics}


def probe_scores(scored: TextLogprobs, k: float) -> list[ProbeScore]:
    """The ``probe_scores`` rows of one (item, model): Min-K%, and Min-K%++ where the
    distribution's mu and sigma are known."""
    n = len(scored.logprobs)
    detail = {"tokens": n, "lowest": lowest_count(n, k)}
    scores = [_score("min_k", min_k(scored.logprobs, k), detail)]
    if scored.means is not None and scored.stds is not None:
        value = min_k_pp(scored.logprobs, scored.means, scored.stds, k)
        scores.append(_score("min_k_pp", value, detail))
    return scores


def _score(metric: str, value: float | None, detail: dict[str, Any]) -> ProbeScore:
    if value is None:
        detail = {**detail, "why_null": "fewer scored tokens than 1/k: no token is in the lowest k%"}
    return ProbeScore(metric=metric, value=value, detail=detail)


@dataclass(frozen=True)
class MinKProbe:
    """min-k as the job runs it (a ``contam.metrics.probes.TextProbe``): each item's text, its Min-K%
    and Min-K%++ at ``k``."""

    kind: ClassVar[str] = KIND
    metric: ClassVar[str] = "min_k"  # every scored text has one (Min-K%++ only where known)
    k: float = DEFAULT_K

    def params(self, source: str, rule: str | None) -> dict[str, Any]:
        return probe_params(self.k, source, rule)

    def text(self, item: ProbeItem, rule: str | None) -> str:
        return scored_text(item, rule)

    def scores(self, scored: TextLogprobs) -> list[ProbeScore]:
        return probe_scores(scored, self.k)


def build(context: ProbeContext, *, k: float = DEFAULT_K) -> MinKProbe:
    """The registry's builder: k checked (ValueError naming ``--k``). The study's text rule comes
    from the job, which checks it against the items' columns."""
    try:
        return MinKProbe(check_k(k))
    except ValueError as exc:
        raise ValueError(f"--k: {exc}") from None
