"""The model table's schema is ModelSpec's own field metadata (config_schema.key / fields_of): a
field added to ModelSpec with a ``key`` is a config key, checked with the same one-line messages."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from contam.harness.config import JUDGE_FIELDS, MODEL_FIELDS, ModelSpec, load_config
from contam.harness.config_schema import Field, check_table, fields_of, key
from contam.harness.errors import UserError
from contam.harness.provider_names import PROVIDERS


def test_every_model_spec_field_is_a_key_of_the_models_table_in_field_order() -> None:
    assert list(MODEL_FIELDS) == [f.name for f in dataclasses.fields(ModelSpec)]
    assert MODEL_FIELDS["provider"] == Field("text", required=True, choices=PROVIDERS)
    assert MODEL_FIELDS["concurrency"].kind == "count" and MODEL_FIELDS["base_url"].kind == "urls"
    assert JUDGE_FIELDS == {**MODEL_FIELDS, "rubric": Field("text")}


@dataclass(frozen=True, kw_only=True)
class Toy:
    size: int = field(default=1, metadata=key("count"))
    colour: str = field(metadata=key("text", required=True, choices=("red", "blue")))
    internal: str = "not a key"  # no metadata: not read from the file


@pytest.mark.parametrize(("table", "message"), [
    ({"colour": "red", "sise": 2}, "toy.toml: [toy]: unknown key 'sise' (did you mean 'size'?)"),
    ({"colour": "red", "internal": "x"}, "toy.toml: [toy]: unknown key 'internal'"),
    ({"colour": "red", "size": 0}, "toy.toml: [toy]: size: must be a whole number >= 1, not 0"),
    ({"size": 2}, "toy.toml: [toy] needs 'colour'"),
])
def test_a_dataclass_with_key_metadata_is_checked_like_any_table(table: dict, message: str) -> None:
    assert list(fields_of(Toy)) == ["size", "colour"]
    with pytest.raises(UserError) as caught:
        check_table(Path("toy.toml"), "[toy]", table, fields_of(Toy))
    assert str(caught.value) == message


def test_a_misspelt_model_key_still_reads_as_one_line_with_a_suggestion(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text('[[models]]\nprovider = "openai"\nmodel = "m"\nconcurency = 4\n')
    with pytest.raises(UserError) as caught:
        load_config(path)
    assert str(caught.value) == (f"{path}: [[models]] #1: unknown key 'concurency' "
                                 "(did you mean 'concurrency'?) (line 4)")
