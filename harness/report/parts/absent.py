"""The report's "Not in this report" list (``Report.not_in_report``): each section the store or
the study's settings cannot give, left out rather than printed empty, with what would add it.

A row is ``{"section": ..., "reason": ...}``, the reason naming the command or setting that adds
the section. The sections the study does not ask for (``[study] exposure`` unset, say) are not
listed, and the optional evidence beside the study (inter-annotator agreement, the probes) keeps
its note, so the paper's own report has no such list. See docs/explanation/report-sections.md.
"""

from __future__ import annotations

from typing import Any

from contam.harness.declare import flag_of
from contam.harness.jobs.options.report import ReportOptions
from contam.harness.report.texts.format import is_missing

__all__ = ["absent", "core_sections", "has_regimes"]

HUMAN = ("Accuracy (overall, per title, the contamination gap, pairwise comparisons, the tests across "
         "models, metric validity, abstention)")
JUDGE = "LLM judge and human × judge agreement"
CONTRAST = "The contrast (the contamination gap, its tests across models, surface metrics by subset, figure 2)"
TITLES = "Per-title accuracy and figure 4"
REGIMES = "Scoring regimes and figure 3"
_REGIME_COLUMNS = ("human_accuracy", "judge_accuracy", "bleu2", "bertscore_f1")


def absent(section: str, reason: str) -> dict[str, str]:
    return {"section": section, "reason": reason}


def has_regimes(regimes: list[dict[str, Any]] | None) -> bool:
    """Whether the scoring-regimes table (``regimes``' rows) has a value beside the answer lengths."""
    return any(not is_missing(row.get(column)) for row in regimes or [] for column in _REGIME_COLUMNS)


def core_sections(*, overall: list | None, judge_rater: str | None, contrast: tuple | None,
                  without_subsets: str | None, regimes: list | None, titled: bool) -> list[dict[str, str]]:
    """The sections of the paper's report this store cannot give (from those sections' values);
    ``titled``: some item has a title."""
    rows = []
    if not overall:
        rows.append(absent(HUMAN, "no human labels in the store (rater `human` or `human:NAME`) and no "
                                  "rule metric to count by; `contam import labels FILE`, or `[study] "
                                  "correct` naming a scored rule metric, adds them"))
    if not judge_rater:
        rows.append(absent(JUDGE, "no judge labels in the store (rater `judge:MODEL`); "
                                  "`contam judge CONFIG` adds them"))
    if not contrast:
        rows.append(absent(CONTRAST, _NO_SUBSETS if without_subsets else _NO_PAIR))
    if overall and not titled:
        rows.append(absent(TITLES, "no item has a title; a `title` column on the items adds it"))
    if not has_regimes(regimes):
        rows.append(absent(REGIMES, "no labels and no BLEU-2 or BERTScore-F1 scores; labels, or "
                                    "`[scoring] metrics` with `bleu2` or `bertscore_f1`, add it"))
    return rows


_NO_SUBSETS = "no item has a subset; a `subset` column on the items adds it"
_NO_PAIR = (f"the report found no pair of subsets to compare; `{flag_of(ReportOptions, 'contrast')} A,B` "
            "adds it")
