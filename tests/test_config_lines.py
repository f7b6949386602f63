"""A refused config key names the line it is on (tomllib gives no positions: the line is found
again in the text), in its table, in the right [[models]] entry; where it cannot be placed, the
error has no line rather than a wrong one."""

from __future__ import annotations

from pathlib import Path

import pytest

from contam.harness.config import load_config
from contam.harness.config_lines import line_of
from contam.harness.errors import UserError

MODELS = '[[models]]\nprovider = "openai"\nmodel = "a"\n\n[[models]]\nprovider = "openai"\n'


def refusal(tmp_path: Path, text: str) -> str:
    path = tmp_path / "study.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError) as caught:
        load_config(path)
    return str(caught.value)


@pytest.mark.parametrize(("text", "ending"), [
    ('store = "s.duckdb"\n\n[study]\nname = "x"\nexposur = "p"\n', "did you mean 'exposure'?) (line 5)"),
    ('[scoring]\n# metrics = ["exact"]\nmetrics = ["exactt"]\n', "(line 3)"),
    (MODELS + 'model = "b"\nconcurrency = 0\n', "not 0 (line 8)"),  # the second entry's key
    (MODELS, "[[models]] #2 needs 'model' (line 5)"),  # a missing key: the table's header
    ('[stduy]\nname = "x"\n', "unknown key 'stduy' (did you mean 'study'?) (line 1)"),
    ('[judge]\nprovider = "openai"\nmodel = "j"\n "rubrik" = "r.txt"\n', "(line 4)"),
])
def test_a_refused_key_names_its_line(tmp_path, text, ending) -> None:
    assert refusal(tmp_path, text).endswith(ending)


def test_a_key_inside_an_inline_table_has_no_line_rather_than_a_wrong_one(tmp_path) -> None:
    message = refusal(tmp_path, 'study = { name = "x", exposur = "p" }\n')
    assert message.endswith("unknown key 'exposur' (did you mean 'exposure'?)")


def test_the_same_key_in_another_table_is_not_taken_for_it() -> None:
    text = '[prompt]\nsystem = "x"\n[study]\nname = "y"\n[probes]\nname = "z"\n'
    assert line_of(text, "[probes]", "name") == 6 and line_of(text, "[study]", "name") == 4
    assert line_of(text, "[scoring]", "name") is None
