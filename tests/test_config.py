"""Run configs: validated into ModelSpecs, refused with the file and the entry named."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import load_config
from harness.errors import UserError
from harness.prompts import DEFAULT_SYSTEM_PROMPT

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def write(tmp_path, text):
    path = tmp_path / "study.toml"
    path.write_text(text, encoding="utf-8")
    return path


MODEL = '[[models]]\nname = "a"\nprovider = "openai"\nmodel = "gpt-x"\n'


def test_a_full_config_becomes_specs(tmp_path):
    config = load_config(write(tmp_path, 'items = "items.csv"\n[prompt]\nsystem = "Be brief."\n'
                               + MODEL + 'rpm = 60\nparams = { temperature = 0.0 }\n'
                               '[judge]\nprovider = "anthropic"\nmodel = "claude-sonnet-5"\n'))
    (spec,) = config.models
    assert (spec.name, spec.provider, spec.model, spec.rpm) == ("a", "openai", "gpt-x", 60)
    assert spec.params == {"temperature": 0.0} and config.system_prompt == "Be brief."
    assert config.items == tmp_path / "items.csv"  # relative to the config file
    assert config.judge.name == "claude-sonnet-5"  # the judge's label defaults to its model id


def test_defaults(tmp_path):
    config = load_config(write(tmp_path, '[[models]]\nprovider = "ollama"\nmodel = "gemma4"\n'))
    assert config.system_prompt == DEFAULT_SYSTEM_PROMPT and config.judge is None
    assert config.models[0].name == "gemma4" and config.models[0].max_attempts == 5


@pytest.mark.parametrize("text,message", [
    (MODEL + "rpmm = 5\n", "[[models]] #1: unknown key 'rpmm'"),
    ('[[models]]\nprovider = "bard"\nmodel = "x"\n', "provider 'bard' is not one of"),
    ('[[models]]\nprovider = "openai"\n', "[[models]] #1 needs 'model'"),
    (MODEL + "concurrency = 0\n", "'concurrency' must be a positive number"),
    (MODEL + MODEL, "two [[models]] entries are named 'a'"),
    ("stor = 1\n", "top level: unknown key 'stor'"),
    ("[[models]\n", "invalid TOML"),
])
def test_bad_configs_are_refused_naming_file_and_entry(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(UserError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value)


def test_models_selection(tmp_path):
    config = load_config(write(tmp_path, MODEL + MODEL.replace('"a"', '"b"')))
    assert [m.name for m in config.select(["b"])] == ["b"]
    assert [m.name for m in config.select(None)] == ["a", "b"]
    with pytest.raises(UserError, match="no \\[\\[models\\]\\] entry named c"):
        config.select(["c"])


def test_missing_file_is_one_line(tmp_path):
    with pytest.raises(UserError, match="no such config file"):
        load_config(tmp_path / "none.toml")


@pytest.mark.parametrize("name", ["study.toml", "emulator.toml"])
def test_the_shipped_examples_are_valid(name):
    config = load_config(EXAMPLES / name)
    assert len(config.models) == 4 and config.judge is not None
    assert {m.provider for m in config.models} == {"openai", "gemini", "anthropic", "ollama"}
