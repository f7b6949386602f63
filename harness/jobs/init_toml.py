"""The text of the study.toml ``contam init`` writes, from a :class:`StudyPlan`: every study key
with a one-line comment, set or shown commented, the ``#:schema`` line editors read first, and
the local model's ``[[models]]`` table commented (the model that runs with no key)."""

from __future__ import annotations

import json
from typing import Any

from contam.harness.config_reference import SCHEMA_NAME
from contam.harness.jobs.demo import local_model_toml
from contam.harness.jobs.init_plan import ANSWER_ALONE_PROMPT, StudyPlan
from contam.harness.jobs.options.store import store_flag
from contam.harness.prompts import USER_TEMPLATE
from contam.harness.study import DEFAULT_NUMERIC_TOLERANCE

__all__ = ["study_toml"]

_COMMENT_COLUMN = 40
_MODELS = '''
[[models]]
name = "gpt-5.6-sol"                    # the label stored in `model`
provider = "openai"                     # openai | gemini | anthropic | ollama | local
model = "gpt-5.6-sol"                   # the provider's model id (key: OPENAI_API_KEY)
cutoff = "2024-06-30"                   # its training cut-off, for the released contrast
rpm = 500                               # request bucket
concurrency = 16                        # requests in flight

[judge]
provider = "anthropic"                  # the LLM judge of `contam judge` (key: ANTHROPIC_API_KEY)
model = "claude-sonnet-5"               # its model id
# rubric = "rubric.txt"                 # your rubric naming right/partially right/wrong; default the paper's
'''


def study_toml(plan: StudyPlan) -> str:
    """The whole file: the plan's tables, then the models, the local one commented."""
    parts = [_head(plan), _study(plan), _prompt(plan), _probes(), _scoring(plan), _MODELS,
             _local_model()]
    return "\n".join(parts)


def line(key: str, value: Any, comment: str, *, active: bool = True) -> str:
    """``key = value    # comment``, commented out unless ``active``; TOML values as JSON."""
    shown = value if isinstance(value, _Raw) else json.dumps(value, ensure_ascii=False)
    text = f"{'' if active else '# '}{key} = {shown}"
    return f"{text:<{_COMMENT_COLUMN - 1}} # {comment}" if len(text) < _COMMENT_COLUMN - 1 \
        else f"{text}  # {comment}"


class _Raw(str):
    """A value written as it is (an inline table)."""


def _head(plan: StudyPlan) -> str:
    lines = [f"#:schema ./{SCHEMA_NAME}",
             "# A contam study. Paths are relative to this file; every key below is optional but "
             "models.",
             line("store", "contam.duckdb", "the study's append-only DuckDB store "
                  f"({store_flag().flag} overrides)")]
    if not plan.own_file:
        return "\n".join([*lines, line("items", plan.items, "item_id,title,subset,question,"
                                       "reference + your own columns"), ""])
    mapped = ", ".join(f"{k} = {json.dumps(v)}" for k, v in plan.column_map.items())
    return "\n".join([*lines, "", "[items]",
                      line("path", plan.items, "your items file (CSV, JSONL or Parquet)"),
                      *_unmapped(plan),
                      line("map", _Raw(f"{{ {mapped} }}"), "contam's column = your file's "
                           "(guessed from the names: check them)"), ""])


def _unmapped(plan: StudyPlan) -> list[str]:
    """A comment naming the columns contam needs that no file column's name gave."""
    if not plan.unmapped:
        return []
    return [f"# no column of your file was taken for {', '.join(plan.unmapped)}: add "
            f"`{plan.unmapped[0]} = \"COLUMN\"` to the map (your columns: "
            f"{', '.join(plan.columns)})"]


def _study(plan: StudyPlan) -> str:
    own = plan.own_file
    return "\n".join([
        "[study]",
        line("name", plan.name, "the benchmark's name in guided prompting's instruction"),
        line("subsets", list(plan.subsets) or ["most-exposed", "least-exposed"],
             "tiers in order of expected exposure: accuracy and trend"
             + (" (your file's values: order them)" if own else ""),
             active=not own),
        line("exposure", _first(plan.exposure), "a numeric item column: the report's Exposure "
             "section" + _others(plan.exposure), active=not own),
        line("released", _first(plan.released), "an ISO-date item column: before/after each "
             "model's cutoff" + _others(plan.released), active=not own),
        line("correct", "labels", "what makes an answer right: labels, exact, contains, numeric, "
             "regex or \"bleu2 >= 0.5\"", active=False), ""])


def _prompt(plan: StudyPlan) -> str:
    fits = ("asks for the answer alone: `exact` compares the whole reply"
            if plan.system_prompt == ANSWER_ALONE_PROMPT else "the paper's")
    user = (line("user", plan.template, "{column}s of your file's own columns")
            if plan.template else
            line("user", USER_TEMPLATE, "{column}s of the item's own columns; unset: the "
                 "paper's bytes", active=False))
    return "\n".join(["[prompt]", line("system", plan.system_prompt, fits), user, ""])


def _probes() -> str:
    return "\n".join(["[probes]", line("text", "{title}\n{question}\n{reference}",
                                       "the text min-k scores; unset: this, each part stripped",
                                       active=False), ""])


def _scoring(plan: StudyPlan) -> str:
    return "\n".join([
        "[scoring]",
        line("metrics", list(plan.metrics), "what `contam score` computes: bleu2, bertscore_f1 "
             "(the paper's), exact, contains, numeric, regex"),
        line("numeric_tolerance", DEFAULT_NUMERIC_TOLERANCE,
             "relative tolerance of the numeric metric"),
        line("regex", "answer is (\\w+)", "the regex metric: group 1 of the first match, then "
             "exact", active=False)])


def _local_model() -> str:
    """The local model's table, commented: uncomment it to run with no key at all."""
    table = local_model_toml().rstrip("\n").splitlines()
    return "\n".join(["# The model that runs with no key, on this machine (as `contam demo`):",
                      *(f"# {text}" for text in table), ""])


def _first(columns: tuple[str, ...]) -> str:
    return columns[0] if columns else "COLUMN"


def _others(columns: tuple[str, ...]) -> str:
    return f" (also: {', '.join(columns[1:])})" if len(columns) > 1 else ""
