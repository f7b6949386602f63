"""Holm's correction within each model's probe family: every p-value the probes section gives one
model (cdd's and ts-guess's Fisher p, guided's one-sided bootstrap p per measure and subset,
min-k's Mann–Whitney p per score and k) is one family, adjusted together, as the gap table adjusts
its Fisher p over the models. How many each probe adds depends on the data (guided adds one p per
measure and subset: six with two subsets, eight with three tiers), so the report counts them.

Which rows and column hold a probe's p-values is its spec's ``p_values``
(``contam.metrics.probe_registry``). Each such row gains ``p_holm`` and ``holm_family_size`` (the defined
p-values in its model's family); an undefined p stays undefined and does not count. See ARCHITECTURE.md, The report.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from contam.harness.report.inputs.cells import nan_if_none
from contam.harness.report.statistics.named_tests import holm
from contam.metrics.probe_registry import PROBES

__all__ = ["adjust", "SENTENCE", "family_sentence", "HOLM_CAPTION"]

SENTENCE = ("Holm p is adjusted within each model's probe family: every p-value the probes section "
            "gives that model (cdd's and ts-guess's Fisher p, guided's one-sided p per measure and "
            "subset, min-k's Mann–Whitney p per score and k), so that a clean model's many tests do "
            "not flag it by chance; read Holm p when judging one model.")

HOLM_CAPTION = " Holm p: within the model's probe family (see the first probe section)."


def _members(probes: dict[str, Any]) -> defaultdict[str, list[tuple[str, dict, str]]]:
    """Per model, its family: (probe kind, row, the row's p column) for every p-value row."""
    families: defaultdict[str, list[tuple[str, dict, str]]] = defaultdict(list)
    for kind, spec in PROBES.items():
        if spec.p_values is None:
            continue
        key, column = spec.p_values
        for row in (probes.get(kind) or {}).get(key) or []:
            families[row["model"]].append((kind, row, column))
    return families


def family_sentence(probes: dict[str, Any]) -> str:
    """:data:`SENTENCE` and what each model's family counts: ``m1: 10 (cdd 1, guided 8, ...)``."""
    sizes = []
    for model, members in _members(probes).items():
        defined = [kind for kind, row, column in members if not math.isnan(nan_if_none(row[column]))]
        parts = ", ".join(f"{kind} {defined.count(kind)}" for kind in dict.fromkeys(defined))
        sizes.append(f"{model}: {len(defined)}" + (f" ({parts})" if parts else ""))
    return f"{SENTENCE} The families count {'; '.join(sizes)} p-values."


def adjust(probes: dict[str, Any]) -> None:
    """Add ``p_holm`` and ``holm_family_size`` to every p-value row of ``probes`` (the section's
    parts by kind), in place."""
    for members in _members(probes).values():
        pvalues = [nan_if_none(row[column]) for _, row, column in members]
        size = sum(not math.isnan(p) for p in pvalues)
        for (_, row, _), adjusted in zip(members, holm(pvalues)):
            row["p_holm"], row["holm_family_size"] = adjusted, size
