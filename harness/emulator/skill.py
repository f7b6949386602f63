"""How well an emulated model knows an item: the model's skill and the item's documentation weight.

A model's :class:`Skill` is drawn from its name alone (the name's SHA-256), so every emulated
model of a study is a different model and the same name is the same model in every process:
it answers a fully documented item with the reference with probability ``documented`` (0.55 to
0.90) and an undocumented one with probability ``undocumented`` (0.02 to 0.18). Without a name
(a direct call, not a request) the skill is :data:`BASE_SKILL`, 0.75 and 0.05.

An item's documentation weight ``w`` (0 to 1) places it between those two: with subsets, 1 for
an item of a documented subset (``official`` unless ``--documented`` says otherwise), else 0;
with an exposure column, ``w = σ(2z)``, the logistic function of twice the item's z-score in
that column (z = 0, the mean, gives 0.5; z = ±1 gives 0.88 and 0.12). Then
P(reference) = undocumented + (documented − undocumented) · w. (The emulator's place:
ARCHITECTURE.md, "The layers".)
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Skill", "BASE_SKILL", "skill_for", "exposure_weights", "DOCUMENTED_RANGE",
           "UNDOCUMENTED_RANGE", "EXPOSURE_SLOPE", "SKILL_HELP", "EXPOSURE_HELP"]

DOCUMENTED_RANGE = (0.55, 0.90)  # P(reference) on a documented item, drawn per model name
UNDOCUMENTED_RANGE = (0.02, 0.18)  # P(reference) on an undocumented item, drawn per model name
EXPOSURE_SLOPE = 2.0  # w = σ(EXPOSURE_SLOPE · z)
HALF_ANSWER = (0.10, 0.05)  # P(the first half of the reference) = 0.10 + 0.05 · w


@dataclass(frozen=True)
class Skill:
    """P(the reference) on a documented (w = 1) and an undocumented (w = 0) item."""

    documented: float
    undocumented: float

    def full_and_half(self, weight: float) -> tuple[float, float]:
        """(P(the reference), P(its first half)) on an item of documentation weight ``weight``."""
        full = self.undocumented + (self.documented - self.undocumented) * weight
        return full, HALF_ANSWER[0] + HALF_ANSWER[1] * weight


BASE_SKILL = Skill(0.75, 0.05)


def skill_for(model: str | None) -> Skill:
    """The skill of the model called ``model``: two uniform draws from its name's SHA-256,
    scaled into :data:`DOCUMENTED_RANGE` and :data:`UNDOCUMENTED_RANGE`; :data:`BASE_SKILL`
    without a name."""
    if model is None:
        return BASE_SKILL
    digest = hashlib.sha256(model.encode("utf-8")).digest()
    first, second = (int.from_bytes(digest[k:k + 8], "big") / 2 ** 64 for k in (0, 8))
    return Skill(_within(DOCUMENTED_RANGE, first), _within(UNDOCUMENTED_RANGE, second))


def _within(bounds: tuple[float, float], share: float) -> float:
    low, high = bounds
    return round(low + (high - low) * share, 3)


def exposure_weights(values: Sequence[float]) -> list[float]:
    """Each value's documentation weight, σ(2z) of its z-score among ``values`` (population
    standard deviation; every z is 0 when all values are equal)."""
    if not values:
        return []
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return [_logistic(EXPOSURE_SLOPE * ((v - mean) / spread if spread else 0.0)) for v in values]


def _logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


SKILL_HELP = (f"each model name is its own model: P(reference) on a documented item is drawn "
              f"from the name's SHA-256 in {DOCUMENTED_RANGE[0]:g}-{DOCUMENTED_RANGE[1]:g}, on an "
              f"undocumented one in {UNDOCUMENTED_RANGE[0]:g}-{UNDOCUMENTED_RANGE[1]:g} (the same "
              "name, the same skill, in every process)")
EXPOSURE_HELP = ("with --items: a numeric items column; an item's documentation weight is "
                 f"w = 1/(1+exp(-{EXPOSURE_SLOPE:g}z)), z its z-score in the column, and "
                 "P(reference) = undocumented + (documented - undocumented) * w")
