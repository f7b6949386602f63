"""A control character in a model's base_url (its own or a replica's) is one line at config load,
naming the model and the character escaped: never an httpx traceback mid-run."""

from __future__ import annotations

import pytest

from contam.harness.config import load_config
from contam.harness.errors import UserError

ESC_URL = "http://127.0.0.1\u001b[31m:8080/v1"


def config(tmp_path, base_url: str) -> str:
    path = tmp_path / "run.toml"
    path.write_text(f'[[models]]\nname = "loc"\nprovider = "openai"\nmodel = "m"\n'
                    f"base_url = {base_url}\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("base_url", [
    '"http://127.0.0.1\\u001b[31m:8080/v1"',
    '["http://127.0.0.1:8080/v1", "http://127.0.0.1\\u001b[31m:8081/v1"]',
])
def test_a_control_character_in_a_base_url_is_one_line_naming_model_and_character(tmp_path,
                                                                                  base_url):
    with pytest.raises(UserError) as refused:
        load_config(config(tmp_path, base_url))
    message = str(refused.value)
    assert "model 'loc'" in message and "control character \\x1b" in message
    assert "\x1b" not in message and "\n" not in message


@pytest.mark.parametrize("hidden", ["\\t", "\\u0000", "\\u202e", "\\u00a0"])
def test_other_unprintable_characters_are_refused_too(tmp_path, hidden):
    with pytest.raises(UserError, match="control character"):
        load_config(config(tmp_path, f'"http://127.0.0.1:80{hidden}/v1"'))


def test_contam_run_says_it_in_one_line(contam, tmp_path):
    status, out, err = contam("run", config(tmp_path, '"http://127.0.0.1\\u001b[31m:8080/v1"'),
                              "--store", tmp_path / "s.duckdb")
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert "loc" in err and "\\x1b" in err and "Traceback" not in err


def test_a_clean_url_is_accepted(tmp_path):
    spec, = load_config(config(tmp_path, '"http://127.0.0.1:8080/v1"')).models
    assert spec.base_url == "http://127.0.0.1:8080/v1"
