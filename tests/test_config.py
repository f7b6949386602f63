"""Run configs: validated into ModelSpecs, refused with the file and the entry named."""

from __future__ import annotations

from pathlib import Path

import pytest

from contam.harness.config import load_config
from contam.harness.errors import UserError
from contam.harness.prompts import DEFAULT_SYSTEM_PROMPT

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
    (MODEL + "rpmm = 5\n", "[[models]] #1: unknown key 'rpmm' (did you mean 'rpm'?)"),
    (MODEL + "concurency = 5\n", "unknown key 'concurency' (did you mean 'concurrency'?)"),
    (MODEL + "zzz = 5\n", "[[models]] #1: unknown key 'zzz'"),
    ('[[models]]\nprovider = "bard"\nmodel = "x"\n', "provider: 'bard' is not one of"),
    ('[[models]]\nprovider = "opnai"\nmodel = "x"\n', "(did you mean 'openai'?)"),
    ('[[models]]\nprovider = "openai"\n', "[[models]] #1 needs 'model'"),
    ('[[models]]\nprovider = "openai"\nmodel = ""\n', "model: must be a non-empty string, not ''"),
    ('[[models]]\nprovider = "openai"\nmodel = 4\n', "model: must be a non-empty string, not 4"),
    (MODEL + "concurrency = 0\n", "concurrency: must be a whole number >= 1, not 0"),
    (MODEL + "concurrency = 2.5\n", "concurrency: must be a whole number >= 1, not 2.5"),
    (MODEL + "concurrency = true\n", "concurrency: must be a whole number >= 1, not true"),
    (MODEL + "max_attempts = -1\n", "max_attempts: must be a whole number >= 1, not -1"),
    (MODEL + "rpm = nan\n", "rpm: must be a finite number > 0, not nan"),
    (MODEL + "tpm = inf\n", "tpm: must be a finite number > 0, not inf"),
    (MODEL + "timeout_s = nan\n", "timeout_s: must be a finite number > 0, not nan"),
    (MODEL + "timeout_s = -3\n", "timeout_s: must be a finite number > 0, not -3"),
    (MODEL + "max_hint_s = 0\n", "max_hint_s: must be a finite number > 0, not 0"),
    (MODEL + 'rpm = "60"\n', "rpm: must be a finite number > 0, not '60'"),
    (MODEL + "rpm = false\n", "rpm: must be a finite number > 0, not false"),
    (MODEL + "params = 3\n", "params: must be a table, not 3"),
    (MODEL + 'batch = "yes"\n', "batch: must be true or false, not 'yes'"),
    ('models = 3\n', "top level: models: must be an array of tables"),
    ('[prompt]\nsystm = "x"\n', "[prompt]: unknown key 'systm' (did you mean 'system'?)"),
    ('store = 5\n', "top level: store: must be a non-empty string, not 5"),
    ('[judge]\nprovider = "openai"\nmodel = "x"\nrpm = inf\n', "[judge]: rpm: must be a finite"),
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
    with pytest.raises(UserError) as info:
        config.select(["bb"])
    assert str(info.value).endswith("no [[models]] entry named 'bb' (did you mean 'b'?); "
                                    "the config has: a, b")


def test_missing_file_is_one_line(tmp_path):
    with pytest.raises(UserError, match="no such config file"):
        load_config(tmp_path / "none.toml")


@pytest.mark.parametrize("name", ["study.toml", "emulator.toml"])
def test_the_shipped_examples_are_valid(name):
    config = load_config(EXAMPLES / name)
    assert len(config.models) == 4 and config.judge is not None
    assert {m.provider for m in config.models} == {"openai", "gemini", "anthropic", "ollama"}


def test_numbers_in_range_pass_and_max_hint_defaults_to_ten_minutes(tmp_path):
    config = load_config(write(tmp_path, MODEL + "rpm = 0.5\ntpm = 1000\nconcurrency = 3\n"
                                        "timeout_s = 2.5\nmax_attempts = 1\n"))
    (spec,) = config.models
    assert (spec.rpm, spec.tpm, spec.concurrency, spec.timeout_s, spec.max_attempts) == (0.5, 1000, 3, 2.5, 1)
    assert spec.max_hint_s == 600
    config = load_config(write(tmp_path, MODEL + "max_hint_s = 30\n"))
    assert config.models[0].max_hint_s == 30


def test_store_and_items_are_relative_to_the_config_file_and_store_flag_wins(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "configs"
    folder.mkdir()
    path = folder / "study.toml"
    path.write_text('store = "runs/x.duckdb"\nitems = "data/items.csv"\n' + MODEL, encoding="utf-8")
    config = load_config(path)
    assert (config.store, config.items) == (folder / "runs/x.duckdb", folder / "data/items.csv")
    assert config.command("run") == f"contam run {path}"
    flagged = load_config(path, store_flag="other dir/y.duckdb")
    assert flagged.store == Path("other dir/y.duckdb")
    assert flagged.command("judge") == f"contam judge {path} --store 'other dir/y.duckdb'"


def test_absolute_store_stays_absolute(tmp_path):
    target = tmp_path / "elsewhere" / "s.duckdb"
    config = load_config(write(tmp_path, f'store = "{target}"\n' + MODEL))
    assert config.store == target


def test_a_typo_through_the_cli_is_one_line_and_exit_2(tmp_path, capsys):
    from contam.harness.cli import main

    path = write(tmp_path, MODEL + "rpmm = 5\n")
    assert main(["run", str(path), "--store", str(tmp_path / "s.duckdb")]) == 2
    err = capsys.readouterr().err
    assert err == (f"contam run: {path}: [[models]] #1: unknown key 'rpmm' (did you mean 'rpm'?) "
                   "(line 5)\n")
    assert not (tmp_path / "s.duckdb").exists()  # refused before anything was opened
