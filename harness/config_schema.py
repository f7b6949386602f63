"""The run config's schema: which keys each TOML table may hold, of what type and in what range.

Every problem becomes one :class:`UserError` line, ``FILE: WHERE: KEY: problem``, so a typo'd key
or an impossible number never reaches the engine (nor a traceback). Misspelt keys get the nearest
allowed one as a suggestion. The keys are declared once, as dataclass fields carrying :func:`key`
metadata (``RunConfig``, ``StudySettings``, ``ItemsSource``, ``ModelSpec``): its kind, its place in
the file, and its meaning; :func:`fields_of` and :func:`tables_of` read the declarations back; see
ARCHITECTURE.md, The study config.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contam.harness.errors import UserError
from contam.harness.provider_names import PROVIDERS
from contam.metrics.metric_registry import metric_labels

__all__ = ["Field", "key", "fields_of", "tables_of", "METRIC_DISPLAY",
           "metric_display", "PROVIDERS", "check_table", "did_you_mean", "KeyProblem"]

Choices = tuple[str, ...] | Callable[[], tuple[str, ...]]

# What people read for each stored metric name (report tables, the view's pages): the registry's
# labels, and guided prompting's ROUGE-L, a probe's metric.
METRIC_DISPLAY = {**metric_labels(), "rouge_l": "ROUGE-L"}


def metric_display(metric: str) -> str:
    """``bleu2`` -> ``BLEU-2``; a metric without a display name keeps its stored name."""
    return METRIC_DISPLAY.get(metric, metric)



@dataclass(frozen=True)
class Field:
    """One key: ``text`` (a non-empty string), ``count`` (a whole number >= 1), ``number`` (a
    finite number > 0), ``flag`` (true or false), ``urls`` (a URL or a non-empty list of them),
    ``texts`` (a non-empty list of non-empty strings), ``table`` or ``tables`` (an array of
    tables), ``source`` (a path or a table). With ``choices``, a text (or each of a list's texts)
    must be one of them (a function: asked each time, as a registry's names are; see
    :meth:`allowed`). ``doc`` is the key's meaning (the reference page and the JSON Schema
    show it); ``at`` its place, ``table.key`` (empty: the field's name in its record's table);
    ``file``: a path relative to the config file."""

    kind: str
    required: bool = False
    choices: Choices = ()
    doc: str = field(default="", compare=False)
    at: str = field(default="", compare=False)
    file: bool = field(default=False, compare=False)

    def allowed(self) -> tuple[str, ...]:
        """The values the key may take now (none: any)."""
        return self.choices() if callable(self.choices) else self.choices


def key(kind: str, doc: str = "", *, required: bool = False, choices: Choices = (),
        at: str = "", file: bool = False) -> dict[str, Field]:
    """A dataclass field's metadata that makes it a config key of ``kind``:
    ``rpm: float | None = field(default=None, metadata=key("number", "requests per minute"))``."""
    return {"key": Field(kind, required, choices, doc, at, file)}


def fields_of(record: type) -> dict[str, Field]:
    """The config keys of a dataclass whose fields carry :func:`key` metadata, in field order
    (the order problems are reported in), by field name; ModelSpec's table is defined this way."""
    return {f.name: f.metadata["key"] for f in dataclasses.fields(record) if "key" in f.metadata}


def tables_of(*records: type) -> dict[str, dict[str, Field]]:
    """The keys the records declare with an ``at`` place, by table (``""``: the top level) and
    key, in declaration order: ``{"study": {"name": Field(...), ...}, ...}``."""
    tables: dict[str, dict[str, Field]] = {}
    for record in records:
        for spec in fields_of(record).values():
            table, _, name = spec.at.rpartition(".")
            tables.setdefault(table, {})[name] = spec
    return tables


def check_table(path: Path, where: str, table: Any, fields: dict[str, Field]) -> None:
    """Refuses ``table`` (the TOML table at ``where``) unless every key is known and valid."""
    if not isinstance(table, dict):
        raise KeyProblem(f"{path}: {where} must be a table", where)
    for key in table:
        if key not in fields:
            raise KeyProblem(f"{path}: {where}: unknown key {key!r}{did_you_mean(key, fields)}",
                             where, key)
    for key, field in fields.items():
        if key in table:
            problem = _problem(field, table[key])
            if problem:
                raise KeyProblem(f"{path}: {where}: {key}: {problem}", where, key)
        elif field.required:
            raise KeyProblem(f"{path}: {where} needs '{key}'", where)


class KeyProblem(UserError):
    """A refused key (or table, ``key`` None) at ``where``: the config's loader adds the line
    it is on, which tomllib does not give (:func:`contam.harness.config_lines.line_of`)."""

    def __init__(self, message: str, where: str, key: str | None = None) -> None:
        super().__init__(message)
        self.where, self.key = where, key


def did_you_mean(word: str, candidates: Any) -> str:
    """`` (did you mean 'rpm'?)`` for the closest candidate, or nothing when none is close."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _problem(field: Field, value: Any) -> str | None:
    check = {"text": _text_problem, "count": _count_problem, "number": _number_problem,
             "flag": _flag_problem, "urls": _urls_problem, "table": _table_problem,
             "tables": _tables_problem, "texts": _texts_problem,
             "source": _source_problem}[field.kind]
    values = value if field.kind == "texts" and isinstance(value, list) else [value]
    return check(value) or next(filter(None, (_choice_problem(field, v) for v in values)), None)


def _text_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return f"must be a non-empty string, not {_shown(value)}"
    return None


def _count_problem(value: Any) -> str | None:
    # bool is an int subclass in Python; TOML's `true` is never a count.
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return f"must be a whole number >= 1, not {_shown(value)}"
    return None


def _number_problem(value: Any) -> str | None:
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or value <= 0):
        return f"must be a finite number > 0, not {_shown(value)}"
    return None


def _urls_problem(value: Any) -> str | None:
    if isinstance(value, list) and value and not any(_text_problem(url) for url in value):
        return None
    if isinstance(value, str) and not _text_problem(value):
        return None
    return f"must be a URL or a non-empty list of URLs, not {_shown(value)}"


def _texts_problem(value: Any) -> str | None:
    if isinstance(value, list) and value and not any(_text_problem(v) for v in value):
        return None
    return f"must be a non-empty list of non-empty strings, not {_shown(value)}"


def _flag_problem(value: Any) -> str | None:
    return None if isinstance(value, bool) else f"must be true or false, not {_shown(value)}"


def _table_problem(value: Any) -> str | None:
    return None if isinstance(value, dict) else f"must be a table, not {_shown(value)}"


def _tables_problem(value: Any) -> str | None:
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return None
    return f"must be an array of tables ([[models]] entries), not {_shown(value)}"


def _source_problem(value: Any) -> str | None:
    if isinstance(value, dict) or not _text_problem(value):
        return None
    return f"must be a file name or a table, not {_shown(value)}"


def _choice_problem(field: Field, value: Any) -> str | None:
    allowed = field.allowed()
    if allowed and value not in allowed:
        return (f"{_shown(value)} is not one of {', '.join(allowed)}"
                f"{did_you_mean(str(value), allowed)}")
    return None


def _shown(value: Any) -> str:
    """A value as it was written in TOML: true, nan, inf, "text", 2.5."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # nan, inf, -inf
    if isinstance(value, dict | list):
        return "a table" if isinstance(value, dict) else "an array"
    return repr(value)
