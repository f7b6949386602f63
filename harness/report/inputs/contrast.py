"""Which two subsets the report contrasts (documented vs undocumented), and why.

``--contrast A,B`` is the user's own choice: a subset it names that has no items is an error.
Without it the report chooses, and never fails because of its own choice: the first and last of
``[study] subsets`` (most and least exposed), else the seed paper's pair where the store has both,
else no contrast at all, and every contrast section is left out with one line saying how to ask
for one. See docs/explanation/report-sections.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contam.harness.declare import flag_of
from contam.harness.errors import UserError
from contam.harness.jobs.options.report import ReportOptions
from contam.harness.study import PAPER_CONTRAST

__all__ = ["ContrastChoice", "choose_contrast", "NO_SUBSETS"]

NO_SUBSETS = ("No item has a subset: the documented-vs-undocumented contrast (gap, its tests and "
              "figure) needs subsets; this report gives accuracy and agreement only.")


@dataclass(frozen=True)
class ContrastChoice:
    pair: tuple[str, str] | None  # (documented, undocumented), or None: no contrast sections
    missing: str | None = None  # without a pair: the overview's one line saying why and what adds one


def choose_contrast(present: Sequence[str], given: tuple[str, str] | None,
                    subsets: Sequence[str]) -> ContrastChoice:
    """``present``: the store's subsets; ``given``: ``--contrast``; ``subsets``: ``[study] subsets``."""
    if not present:
        return ContrastChoice(None, NO_SUBSETS)
    if given:
        _require_present(given, present)
        return ContrastChoice(given)
    for pair in _defaults(subsets):
        if all(name in present for name in pair):
            return ContrastChoice(pair)
    return ContrastChoice(None, _no_pair(present, subsets))


def _defaults(subsets: Sequence[str]) -> list[tuple[str, str]]:
    study = [(subsets[0], subsets[-1])] if len(subsets) >= 2 else []
    return [*study, PAPER_CONTRAST]


def _require_present(given: tuple[str, str], present: Sequence[str]) -> None:
    for name in given:
        if name not in present:
            raise UserError(f"{flag_of(ReportOptions, 'contrast')}: subset {name!r} has no items "
                            f"(subsets in the store: {', '.join(map(str, present))})")


def _no_pair(present: Sequence[str], subsets: Sequence[str]) -> str:
    asked = "`[study] subsets` names fewer than two" if len(subsets) < 2 else "`[study] subsets`' ends are missing"
    return (f"No contrast: {asked} and the store's subsets ({', '.join(map(str, present))}) are not the "
            f"paper's ({' and '.join(PAPER_CONTRAST)}), so the contrast sections are left out; "
            f"`{flag_of(ReportOptions, 'contrast')} A,B` compares two of them.")
