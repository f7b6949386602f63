"""What ``contam init`` writes into a study.toml, decided before any text is written: the items
(the example ``items.csv``, or the user's file with ``--items``: its column map guessed from the
names, a question template over its columns, its numeric and date columns offered as
``exposure`` and ``released``), the metrics, and the system prompt that fits them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from contam.harness.config import DEFAULT_SYSTEM_PROMPT
from contam.harness.config_schema import did_you_mean
from contam.harness.declare import flag_of
from contam.harness.errors import UserError
from contam.harness.jobs.options.init import InitOptions
from contam.harness.study import DEFAULT_METRICS
from contam.harness.store.file_columns import FileColumn, file_columns
from contam.metrics.metric_registry import find_metric, study_metrics
from contam.metrics.probes import DEFAULT_DATASET

__all__ = ["StudyPlan", "ANSWER_ALONE_PROMPT", "plan_study", "system_prompt_for",
           "parse_metrics", "guess_map"]

# `exact` compares the whole reply with the reference: a sentence never equals it.
ANSWER_ALONE_PROMPT = ("Answer from memory only. Do not look anything up. "
                       "Reply with the answer alone: no sentence.")
# contam's item columns and the names a file may give them, most usual first.
_SYNONYMS = {"item_id": ("item_id", "id", "qid", "question_id", "uid", "key"),
             "title": ("title", "work", "source", "book", "game"),
             "subset": ("subset", "tier", "split", "group", "category", "level"),
             "question": ("question", "prompt", "query", "q", "input"),
             "reference": ("reference", "answer", "target", "gold", "expected", "output")}


@dataclass(frozen=True)
class StudyPlan:
    """The choices a study.toml is written from; the defaults are the example study's."""

    name: str = DEFAULT_DATASET  # [study] name
    items: str = "items.csv"  # the items file, relative to the study folder
    column_map: dict[str, str] = field(default_factory=dict)  # contam column -> file column
    template: str | None = None  # [prompt] user; None: the paper's, shown commented
    exposure: tuple[str, ...] = ("log10_pages",)  # numeric columns; the first is offered
    released: tuple[str, ...] = ("released",)  # date columns; the first is offered
    subsets: tuple[str, ...] = ("official", "fan")
    metrics: tuple[str, ...] = DEFAULT_METRICS
    own_file: bool = False  # --items: the file's columns are offered, commented, not set
    columns: tuple[str, ...] = ()  # --items: the file's columns
    unmapped: tuple[str, ...] = ()  # --items: contam's required columns no file column gave

    @property
    def system_prompt(self) -> str:
        return system_prompt_for(self.metrics)


def system_prompt_for(metrics: Sequence[str]) -> str:
    """The paper's prompt, or one asking for the answer alone where a metric that needs it
    (the registry's ``answer_alone``: exact) scores it."""
    alone = any((spec := find_metric(name)) is not None and spec.answer_alone for name in metrics)
    return ANSWER_ALONE_PROMPT if alone else DEFAULT_SYSTEM_PROMPT


def parse_metrics(text: str | None) -> tuple[str, ...]:
    """``--metrics exact,contains``; each must be a metric contam scores."""
    if not text:
        return DEFAULT_METRICS
    names, known = tuple(name.strip() for name in text.split(",") if name.strip()), study_metrics()
    for name in names:
        if name not in known:
            raise UserError(f"{flag_of(InitOptions, 'metrics')}: {name!r} is not one of {', '.join(known)}"
                            f"{did_you_mean(name, known)}")
    return names or DEFAULT_METRICS


def plan_study(folder: Path, items: Path | None, metrics: tuple[str, ...]) -> StudyPlan:
    """The example study's plan, or one read from the columns of the user's ``items`` file."""
    if items is None:
        return StudyPlan(metrics=metrics)
    if not items.is_file():
        raise UserError(f"{flag_of(InitOptions, 'items')} {items}: no such file")
    columns = file_columns(items)
    column_map = guess_map([c.name for c in columns])
    return StudyPlan(name=folder.name, items=os.path.relpath(items.resolve(), folder.resolve()),
                     column_map=column_map, template=_template(columns, column_map),
                     exposure=_free(columns, column_map, "number"),
                     released=_free(columns, column_map, "date"),
                     subsets=_subset_values(columns, column_map), metrics=metrics, own_file=True,
                     columns=tuple(c.name for c in columns),
                     unmapped=_unmapped([c.name for c in columns], column_map))


def guess_map(names: Sequence[str]) -> dict[str, str]:
    """contam column -> the file's column, guessed from the names (case aside); a column the
    file already names as contam does needs no entry."""
    lowered = {name.lower(): name for name in names}
    guessed = {}
    for contam, synonyms in _SYNONYMS.items():
        found = next((lowered[s] for s in synonyms if s in lowered), None)
        if found is not None and found != contam and found not in guessed.values():
            guessed[contam] = found
    return guessed


def _unmapped(names: list[str], column_map: dict[str, str]) -> tuple[str, ...]:
    needed = ("item_id", "question", "reference")
    return tuple(n for n in needed if n not in column_map and n not in names)


def _contam_name(name: str, column_map: dict[str, str]) -> str:
    return next((contam for contam, file in column_map.items() if file == name), name)


def _template(columns: list[FileColumn], column_map: dict[str, str]) -> str:
    """``Library: {library}\\nQuestion: {question}``: the file's own text columns (not the id,
    subset or answer), then the question."""
    skip = {"item_id", "subset", "reference", "question"}
    shown = [_contam_name(c.name, column_map) for c in columns if c.holds == "text"]
    lines = [f"{name.replace('_', ' ').capitalize()}: {{{name}}}" for name in shown
             if name not in skip and name.isidentifier()]
    return "\n".join([*lines, "Question: {question}"])


def _free(columns: list[FileColumn], column_map: dict[str, str], holds: str) -> tuple[str, ...]:
    """The file's columns holding ``holds`` that are not one of contam's own."""
    return tuple(c.name for c in columns if c.holds == holds
                 and _contam_name(c.name, column_map) not in _SYNONYMS)


def _subset_values(columns: list[FileColumn], column_map: dict[str, str]) -> tuple[str, ...]:
    subset = next((c for c in columns if _contam_name(c.name, column_map) == "subset"), None)
    return subset.values if subset is not None and len(subset.values) <= 12 else ()
