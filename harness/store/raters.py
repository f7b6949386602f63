"""The rater vocabulary of the labels table: who gave a label (ARCHITECTURE.md, The store).

``human`` or ``human:NAME`` is a person, ``judge:MODEL`` the LLM judge, and ``human:adjudicated``
the decisions of whoever settles disagreements in ``contam view`` (left out of inter-annotator
agreement). The view writes these raters and the report and the jobs read them, all from here.
The frozen migrations in store/schema.py spell ``judge:%`` out, as they must stay as shipped.
"""

from __future__ import annotations

__all__ = ["ADJUDICATOR", "HUMAN_RATER_SQL", "JUDGE_RATER_SQL", "judge_rater", "human_rater"]

ADJUDICATOR = "human:adjudicated"  # the rater an adjudicator's decisions are stored as
HUMAN_RATER_SQL = "(rater = 'human' OR rater LIKE 'human:%')"  # a human rater's labels, in SQL
JUDGE_RATER_SQL = "rater LIKE 'judge:%'"  # an LLM judge's labels, in SQL


def judge_rater(judge_name: str) -> str:
    """The rater the judge called ``judge_name`` (its config name) labels as."""
    return f"judge:{judge_name}"


def human_rater(name: str) -> str:
    """The rater a person called ``name`` labels as in ``contam view``."""
    return f"human:{name}"
