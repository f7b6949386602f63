"""The config's declaration (harness/config.py, harness/study.py) written out for people and
editors: the JSON Schema of study.toml (harness/data/study.schema.json, read by taplo and Even
Better TOML through a first line ``#:schema ./study.schema.json``) and docs/reference/config.md.
Both files are generated and committed; ``python -m contam.harness.config_reference`` rewrites them, and
tests/test_config_reference.py fails when either is stale.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contam.harness.config import CONFIG_TABLES, ItemsSource, ModelSpec, RunConfig
from contam.harness.config_schema import Field, fields_of
from contam.harness.study import StudySettings

__all__ = ["SCHEMA_FILE", "SCHEMA_NAME", "declared_keys", "json_schema", "reference_markdown",
           "schema_text"]

SCHEMA_NAME = "study.schema.json"
SCHEMA_FILE = Path(__file__).parent / "data" / SCHEMA_NAME
_STRING = {"type": "string", "minLength": 1}
_KIND_SCHEMA = {
    "text": _STRING, "count": {"type": "integer", "minimum": 1},
    "number": {"type": "number", "exclusiveMinimum": 0}, "flag": {"type": "boolean"},
    "urls": {"anyOf": [_STRING, {"type": "array", "items": _STRING, "minItems": 1}]},
    "texts": {"type": "array", "items": _STRING, "minItems": 1}, "table": {"type": "object"},
    "tables": {"type": "array", "items": {"type": "object"}},
}
_KIND_WORDS = {"text": "text", "count": "whole number ≥ 1", "number": "number > 0",
               "flag": "true or false", "urls": "URL or list of URLs", "texts": "list of texts",
               "table": "table", "tables": "array of tables", "source": "file name or table"}


def declared_keys() -> Iterator[tuple[str, Field, Any]]:
    """Every config key as ``(table.key, its Field, its default or None)``; a model table's keys
    (``[[models]]``, and ``[judge]`` beside its rubric) under ``models``."""
    yield from _placed_keys()
    for name, spec in fields_of(ModelSpec).items():
        yield f"models.{name}", spec, _default(ModelSpec, name)


def _placed_keys() -> Iterator[tuple[str, Field, Any]]:
    """The keys declared with their place in the file (all but a model table's)."""
    for record in (RunConfig, ItemsSource, StudySettings):
        for name, spec in fields_of(record).items():
            yield spec.at, spec, _default(record, name)


def _default(record: type, name: str) -> Any:
    field = next(f for f in dataclasses.fields(record) if f.name == name)
    default = field.default if field.default is not dataclasses.MISSING else None
    return list(default) if isinstance(default, tuple) else default


# -- the JSON Schema ---------------------------------------------------------------------------

def json_schema() -> dict[str, Any]:
    """study.toml's JSON Schema (draft 2020-12), every key with its meaning and default."""
    models = _object(ModelSpec)
    judge = _object(ModelSpec)
    judge["properties"].update(_properties("judge"))
    tables = {name: _table_object(name) for name in CONFIG_TABLES if name not in ("", "items")}
    top = _properties("")
    top["items"] = {**top["items"], "anyOf": [_STRING, _table_object("items")]}
    top["models"] = {**top["models"], "items": models}
    top["judge"] = {**top["judge"], **judge}
    for name, table in tables.items():
        top[name] = {**top.get(name, {}), **table}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "contam study.toml", "type": "object", "properties": top,
            "additionalProperties": False}


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


def _table_object(table: str) -> dict[str, Any]:
    required = [name for name, spec in CONFIG_TABLES[table].items() if spec.required]
    return {"type": "object", "properties": _properties(table), "additionalProperties": False,
            **({"required": required} if required else {})}


def _object(record: type) -> dict[str, Any]:
    specs = fields_of(record)
    return {"type": "object", "additionalProperties": False,
            "properties": {name: _property(spec, _default(record, name))
                           for name, spec in specs.items()},
            "required": [name for name, spec in specs.items() if spec.required]}


def _properties(table: str) -> dict[str, Any]:
    """The schema of each key at ``table`` (``""``: the top level), from its declaration."""
    return {at.rpartition(".")[2]: _property(spec, default)
            for at, spec, default in _placed_keys() if at.rpartition(".")[0] == table}


def _property(spec: Field, default: Any) -> dict[str, Any]:
    schema = dict(_KIND_SCHEMA.get(spec.kind, {}))
    if spec.allowed():
        inner = {**_STRING, "enum": list(spec.allowed())}
        schema = {**schema, "items": inner} if spec.kind == "texts" else {**schema, **inner}
    schema["description"] = spec.doc
    if default not in (None, {}, []):
        schema["default"] = default
    return schema


# -- docs/reference/config.md ------------------------------------------------------------------

def reference_markdown() -> str:
    """The reference page: one table per TOML table, each key's type, default and meaning."""
    lines = ["# Config reference", "",
             "Every key of a study's `study.toml`, generated from the declaration in "
             "`harness/config.py` and `harness/study.py` by `python -m contam.harness.config_reference` "
             "(a test fails when this page is stale). Paths are relative to the config file. "
             f"Editors that read JSON Schema (taplo, Even Better TOML) check the file against "
             f"`{SCHEMA_NAME}` through its first line `#:schema ./{SCHEMA_NAME}`, which "
             "`contam init` writes.", ""]
    for table, rows in _rows_by_table().items():
        heading = "Top level" if not table else f"[[{table}]]" if table == "models" else f"[{table}]"
        lines += [f"## {heading}", "", "| Key | Type | Default | Meaning |", "|---|---|---|---|",
                  *rows, ""]
    return "\n".join(lines)


def _rows_by_table() -> dict[str, list[str]]:
    tables: dict[str, list[str]] = {}
    for at, spec, default in declared_keys():
        table, _, name = at.rpartition(".")
        meaning = spec.doc.replace("|", r"\|")
        tables.setdefault(table, []).append(
            f"| `{name}` | {_type_words(spec)} | {_default_words(default)} | {meaning} |")
    return tables


def _type_words(spec: Field) -> str:
    words = _KIND_WORDS[spec.kind] + (", required" if spec.required else "")
    choices = spec.allowed()
    return f"{words}: one of {', '.join(f'`{c}`' for c in choices)}" if choices else words


def _default_words(default: Any) -> str:
    return "—" if default in (None, {}, []) else f"`{json.dumps(default, ensure_ascii=False)}`"


def write_files(root: Path) -> list[Path]:
    """Rewrites the schema and the reference page under the repository at ``root``."""
    schema = root / "harness" / "data" / SCHEMA_NAME
    page = root / "docs" / "reference" / "config.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    schema.write_text(schema_text(), encoding="utf-8")
    page.write_text(reference_markdown(), encoding="utf-8")
    return [schema, page]


if __name__ == "__main__":
    for written in write_files(Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()):
        print(f"wrote {written}")
