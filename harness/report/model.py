"""The report as a value: :class:`Report`, one frozen field per top-level key of report.json, built
once by :func:`contam.harness.report.analysis.build_report` and written by :meth:`Report.to_json`.

Each section is built as a :class:`Section`: its value and the notes it made while being built
(what its numbers leave out, and why). The report keeps each section's notes under its key
(``section_notes``) and gathers ``notes`` from them in :data:`NOTES_ORDER`, the order the sections
are built in. The rows inside a section stay JSON-shaped (lists of dicts), as report.json has them.
See ARCHITECTURE.md, "The report".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Generic, TypeVar

__all__ = ["Note", "Section", "noted", "Report", "OMITTED", "NOTES_ORDER", "JSON_KEYS", "Rows", "Part"]

T = TypeVar("T")
Rows = list[dict[str, Any]]  # one dict per model (or per model and subset ...), as report.json has it
Part = dict[str, Any]  # a section that is one JSON object


@dataclass(frozen=True)
class Note:
    """What a section's numbers leave out, and why (``section`` may name a part: ``missing.gpt``)."""

    section: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"section": self.section, "reason": self.reason}


@dataclass(frozen=True)
class Section(Generic[T]):
    """A section as built: its value (None: no data) and its own notes."""

    value: T
    notes: tuple[Note, ...] = ()


def noted(build: Callable[[list[dict[str, str]]], T]) -> Section[T]:
    """A section whose builder appends its notes (``{"section", "reason"}``) to the list it is given:
    its value, with those notes and no other section's."""
    notes: list[dict[str, str]] = []
    value = build(notes)
    return Section(value, tuple(Note(**note) for note in notes))


class _Omitted:
    """The value of a key report.json leaves out (``outcome`` under labels); false, as None is."""

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "OMITTED"


OMITTED: Any = _Omitted()

# the sections that may make notes, in the order they are built (report.json's notes keep it)
NOTES_ORDER = ("human_rater", "judge_rater", "gap", "rank_correlation", "metric_validity", "missing",
               "judge_gap", "surface_by_subset", "inter_annotator", "meta", "probes", "cmh", "logistic",
               "exposure", "cutoff")

_ABSENT_WHEN_EMPTY = {"metadata": {"optional": True}}  # report.json has the key only with a value


@dataclass(frozen=True, kw_only=True)
class Report:
    """Everything `contam report` prints (ARCHITECTURE.md, The report; docs/reference/report-json.md).
    Fields are in report.json's order; a section without data is None."""

    contrast: dict[str, str] | None = None  # documented, undocumented
    human_rater: str | None = None
    judge_rater: str | None = None
    overall: Rows | None = None
    per_title: Rows | None = None
    gap: Rows | None = None
    judge: Rows | None = None
    agreement: Part | None = None
    rank_correlation: Part | None = None
    metric_validity: Part | None = None
    judge_gap: Rows | None = None
    surface_by_subset: Part | None = None
    regimes: Rows | None = None
    mcnemar: Rows | None = None
    inter_annotator: Part | None = None
    abstention: Rows | None = None
    missing: Rows | None = None
    answer_length: Rows | None = None
    meta: Part = field(default_factory=dict)
    provenance: Part | None = None
    probes: Part | None = None
    validation: Part | None = None
    cmh: Part | None = None
    logistic: Part | None = None
    outcome: str | None = field(default=OMITTED, **_ABSENT_WHEN_EMPTY)  # OMITTED under labels
    study: Part | None = field(default=None, **_ABSENT_WHEN_EMPTY)
    exposure: Part | None = field(default=None, **_ABSENT_WHEN_EMPTY)
    cutoff: Part | None = field(default=None, **_ABSENT_WHEN_EMPTY)
    tiers: Part | None = field(default=None, **_ABSENT_WHEN_EMPTY)
    rule_metrics: list[str] | None = field(default=None, **_ABSENT_WHEN_EMPTY)
    rule_accuracy: Rows | None = field(default=None, **_ABSENT_WHEN_EMPTY)
    by: Part | None = field(default=None, **_ABSENT_WHEN_EMPTY)
    without_subsets: str | None = field(default=None, **_ABSENT_WHEN_EMPTY)
    without_contrast: str | None = field(default=None, **_ABSENT_WHEN_EMPTY)
    notes: tuple[Note, ...] = field(init=False)  # gathered from section_notes
    not_in_report: Rows = field(default_factory=list)
    section_notes: Mapping[str, tuple[Note, ...]] = field(default_factory=dict, metadata={"json": False})

    def __post_init__(self) -> None:
        unknown = set(self.section_notes) - set(NOTES_ORDER)
        if unknown:
            raise ValueError(f"notes of sections outside NOTES_ORDER: {', '.join(sorted(unknown))}")
        object.__setattr__(self, "section_notes", MappingProxyType(dict(self.section_notes)))
        object.__setattr__(self, "notes", tuple(note for key in NOTES_ORDER
                                                for note in self.section_notes.get(key, ())))

    @classmethod
    def of(cls, **built: Any) -> Report:
        """The report from its sections: a :class:`Section` gives its value to its key and its
        notes to ``section_notes``; any other value is the key's value as it is."""
        values = {key: v.value if isinstance(v, Section) else v for key, v in built.items()}
        notes = {key: v.notes for key, v in built.items() if isinstance(v, Section) and v.notes}
        return cls(**values, section_notes=notes)

    def rater(self, side: str) -> str | None:
        """The ``human`` or the ``judge`` rater."""
        return {"human": self.human_rater, "judge": self.judge_rater}[side]

    def to_json(self) -> dict[str, Any]:
        """report.json's object: every key in order, an optional one only with a value."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("json", True) and not (f.metadata.get("optional") and _left_out(f.name, value)):
                out[f.name] = [note.to_json() for note in value] if f.name == "notes" else value
        return out


JSON_KEYS = tuple(f.name for f in fields(Report) if f.metadata.get("json", True))  # every key it may have


def _left_out(key: str, value: Any) -> bool:
    """``outcome`` may be null in report.json (no outcome at all); the others are there with a value."""
    return value is OMITTED if key == "outcome" else not value
