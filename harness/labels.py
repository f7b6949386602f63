"""The label vocabulary: the three verdicts a rater gives, the names people see, the spellings an
imported labels file may use and the replies the judge is asked for (ARCHITECTURE.md, The store).

Defined here only, light to import, so that metrics/judge.py, the store, the report and the view
read one list (tests/test_vocabulary.py keeps it that way).
"""

from __future__ import annotations

__all__ = ["LABELS", "LABEL_NAMES", "LABEL_KEYS", "JUDGE_REPLIES", "LABEL_SPELLINGS"]

LABELS = ("right", "partial", "wrong")  # the labels table's values, best first
LABEL_NAMES = {"right": "Right", "partial": "Partially right", "wrong": "Wrong"}  # as people read them
# The keys a rater presses in contam view: its rank, and the label's first letter.
LABEL_KEYS = {label: (str(rank), label[0]) for rank, label in enumerate(LABELS, 1)}

# What the judge answers with (the display names, lower-cased) -> the label stored.
JUDGE_REPLIES = {name.lower(): label for label, name in LABEL_NAMES.items()}

# Every spelling `contam import` accepts (after folding case, "_" and "-") -> the label stored.
LABEL_SPELLINGS = {**JUDGE_REPLIES, **{label: label for label in LABELS},
                   "correct": "right", "partially correct": "partial", "incorrect": "wrong"}
