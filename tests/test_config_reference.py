"""The config's declaration written out: the committed JSON Schema of study.toml and
docs/reference/config.md are what the declaration generates, every key has a meaning, and the
schema accepts and refuses what `load_config` accepts and refuses."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import jsonschema
import pytest

from contam.harness.config import load_config
from contam.harness.config_reference import (SCHEMA_FILE, declared_keys, json_schema,
                                      reference_markdown, schema_text)
from contam.harness.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
REGENERATE = "stale: run `python -m contam.harness.config_reference` and commit what it writes"
EXAMPLE_CONFIGS = sorted(p for p in (ROOT / "examples").rglob("*.toml"))


def test_the_committed_schema_is_the_one_the_declaration_gives() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), REGENERATE


def test_the_committed_reference_page_is_the_one_the_declaration_gives() -> None:
    page = ROOT / "docs" / "reference" / "config.md"
    assert page.read_text(encoding="utf-8") == reference_markdown(), REGENERATE


def test_every_key_has_a_meaning_and_a_row_on_the_reference_page() -> None:
    page = reference_markdown()
    for place, spec, _ in declared_keys():
        assert spec.doc.strip().endswith("."), f"{place} has no meaning in its declaration"
        assert f"| `{place.rpartition('.')[2]}` | " in page, place
    assert "| `correct` | text | — | What makes an answer correct" in page


def test_the_schema_is_a_valid_json_schema_with_defaults() -> None:
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["scoring"]["properties"]["metrics"]["default"] == \
        ["bleu2", "bertscore_f1"]
    assert schema["properties"]["models"]["items"]["required"] == ["provider", "model"]


@pytest.mark.parametrize("config", EXAMPLE_CONFIGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_config_passes_the_schema(config: Path) -> None:
    load_config(config)
    jsonschema.validate(tomllib.loads(config.read_text(encoding="utf-8")), json_schema())


@pytest.mark.parametrize("text", [
    '[study]\nexposur = "x"\n',
    '[scoring]\nmetrics = ["exactt"]\n',
    '[[models]]\nprovider = "openai"\nmodel = "m"\nconcurrency = 0\n',
    '[[models]]\nprovider = "openai"\n',
    '[items]\nmap = { item_id = "id" }\n',
    '[judge]\nprovider = "openai"\nmodel = "j"\nrubrik = "r.txt"\n',
    "items = 3\n",
])
def test_the_schema_refuses_what_the_config_loader_refuses(tmp_path: Path, text: str) -> None:
    path = tmp_path / "study.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError):
        load_config(path)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(tomllib.loads(text), json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def test_scoring_metrics_choices_are_the_registrys_when_a_config_is_read(tmp_path: Path,
                                                                        monkeypatch) -> None:
    """The choices are asked of the metric registry when a config is checked, not fixed when
    the schema module was imported: a metric registered afterwards is accepted, and offered as
    the did-you-mean."""
    from contam.metrics import metric_registry

    toy = metric_registry.MetricSpec("toyrule", "Toy rule", metric_registry.RULE,
                                     "contam.metrics.rules:exact_scorer")
    monkeypatch.setitem(metric_registry.METRICS, "toyrule", toy)
    path = tmp_path / "study.toml"
    path.write_text('[scoring]\nmetrics = ["toyrule"]\n', encoding="utf-8")
    assert load_config(path).study.metrics == ("toyrule",)
    path.write_text('[scoring]\nmetrics = ["toyrul"]\n', encoding="utf-8")
    with pytest.raises(UserError, match="did you mean 'toyrule'"):
        load_config(path)
    assert "toyrule" in json_schema()["properties"]["scoring"]["properties"]["metrics"]["items"]["enum"]
