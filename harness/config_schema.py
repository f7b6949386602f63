"""The run config's schema: which keys each TOML table may hold, of what type and in what range.

Every problem becomes one :class:`UserError` line, ``FILE: WHERE: KEY: problem``, so a typo'd key
or an impossible number never reaches the engine (nor a traceback). Misspelt keys get the nearest
allowed one as a suggestion. A model's table is read from ``ModelSpec``'s own fields (:func:`key`,
:func:`fields_of`); see ARCHITECTURE.md, The study config.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.provider_names import PROVIDERS
from metrics.metric_registry import metric_labels, study_metrics

__all__ = ["Field", "key", "fields_of", "TOP_FIELDS", "PROMPT_FIELDS", "STUDY_FIELDS",
           "PROBES_FIELDS", "SCORING_FIELDS", "METRIC_NAMES", "METRIC_DISPLAY", "metric_display",
           "PROVIDERS", "check_table",
           "did_you_mean"]

# What [scoring] metrics may name (metrics.metric_registry).
METRIC_NAMES = study_metrics()
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
    tables). With ``choices``, a text (or each of a list's texts) must be one of them."""

    kind: str
    required: bool = False
    choices: tuple[str, ...] = ()


TOP_FIELDS = {"store": Field("text"), "items": Field("text"), "prompt": Field("table"),
              "models": Field("tables"), "judge": Field("table"), "study": Field("table"),
              "probes": Field("table"), "scoring": Field("table")}
PROMPT_FIELDS = {"system": Field("text"), "user": Field("text")}
STUDY_FIELDS = {
    "name": Field("text"),  # the benchmark's name in guided prompting's instruction
    "exposure": Field("text"),  # a numeric item column
    "released": Field("text"),  # an ISO-date item column
    "subsets": Field("texts"),  # ordered tiers, in order of expected exposure
    "correct": Field("text"),  # what makes an answer correct (metrics.outcome)
}
PROBES_FIELDS = {"text": Field("text")}  # min-k's text rule, a template over item columns
SCORING_FIELDS = {
    "metrics": Field("texts", choices=METRIC_NAMES),
    "numeric_tolerance": Field("number"),  # relative
    "regex": Field("text"),
}


def key(kind: str, *, required: bool = False, choices: tuple[str, ...] = ()) -> dict[str, Field]:
    """A dataclass field's metadata that makes it a config key of ``kind``:
    ``rpm: float | None = field(default=None, metadata=key("number"))``."""
    return {"key": Field(kind, required, choices)}


def fields_of(record: type) -> dict[str, Field]:
    """The config keys of a dataclass whose fields carry :func:`key` metadata, in field order
    (the order problems are reported in); ModelSpec's table is defined this way, once."""
    return {f.name: f.metadata["key"] for f in dataclasses.fields(record) if "key" in f.metadata}


def check_table(path: Path, where: str, table: Any, fields: dict[str, Field]) -> None:
    """Refuses ``table`` (the TOML table at ``where``) unless every key is known and valid."""
    if not isinstance(table, dict):
        raise UserError(f"{path}: {where} must be a table")
    for key in table:
        if key not in fields:
            raise UserError(f"{path}: {where}: unknown key {key!r}{did_you_mean(key, fields)}")
    for key, field in fields.items():
        if key in table:
            problem = _problem(field, table[key])
            if problem:
                raise UserError(f"{path}: {where}: {key}: {problem}")
        elif field.required:
            raise UserError(f"{path}: {where} needs '{key}'")


def did_you_mean(word: str, candidates: Any) -> str:
    """`` (did you mean 'rpm'?)`` for the closest candidate, or nothing when none is close."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _problem(field: Field, value: Any) -> str | None:
    check = {"text": _text_problem, "count": _count_problem, "number": _number_problem,
             "flag": _flag_problem, "urls": _urls_problem, "table": _table_problem,
             "tables": _tables_problem, "texts": _texts_problem}[field.kind]
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


def _choice_problem(field: Field, value: Any) -> str | None:
    if field.choices and value not in field.choices:
        return (f"{_shown(value)} is not one of {', '.join(field.choices)}"
                f"{did_you_mean(str(value), field.choices)}")
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
