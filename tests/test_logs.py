"""A run's story in one place: the log file beside the store, -v on stderr, no key in either;
`contam --version` and an example under every command's --help."""

from __future__ import annotations

import logging
import tomllib
from pathlib import Path

import pytest

import contam.harness
from contam.harness.cli import EXAMPLES, HANDLERS, main
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.logs import configure_logging, run_log, run_log_path
from contam.providers.base import resolve_api_key
from tests.runkit import KEYS, model_entry, write_config

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    yield
    configure_logging(0)  # the next test starts quiet


def test_version_is_the_package_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"contam {contam.harness.__version__}"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "contam.harness.__version__"}


@pytest.mark.parametrize("command", sorted(EXAMPLES))
def test_every_command_has_an_example_under_its_help(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    assert f"example:\n  {EXAMPLES[command]}" in text and EXAMPLES[command].startswith(f"contam {command}")
    assert "-v, --verbose" in text


def test_every_command_is_in_the_examples():
    assert set(HANDLERS) == set(EXAMPLES)


def test_the_log_file_sits_beside_the_store():
    assert run_log_path("runs/paper.duckdb", "r1") == Path("runs/paper.r1.log")


def test_a_run_logs_retries_hints_and_cool_downs_to_its_file_named_last(tmp_path, contam):
    store = tmp_path / "s.duckdb"
    with run_emulator(EmulatorSettings(script=["500", "429:0.3"])) as emu:
        config = write_config(tmp_path, [model_entry("openai", emu, concurrency=1)], items=3)
        status, out, err = contam("run", config, "--store", store, "--no-progress")
    assert status == 0, err
    last = out.strip().splitlines()[-1]
    assert last.startswith("log: ") and last.endswith(".log")
    log = Path(last.removeprefix("log: "))
    assert log.parent == tmp_path and log.name.startswith("s.")
    text = log.read_text(encoding="utf-8")
    assert "attempt 1/" in text and "HTTP 500" in text
    assert "server asks 0.3 s" in text and "cool-down of 0.3 s" in text
    assert "openai-m: 3/3 answered" in text
    assert not any(key in text for key in KEYS.values())


def test_a_stopped_model_is_in_the_log_with_its_cause(tmp_path, contam):
    store = tmp_path / "s.duckdb"
    with run_emulator(EmulatorSettings(script=["401"])) as emu:
        config = write_config(tmp_path, [model_entry("anthropic", emu, concurrency=1)], items=2)
        status, out, err = contam("run", config, "--store", store, "--no-progress")
    assert status != 0
    assert f"then run `contam run {config} --store {store}`" in err  # the hint keeps --store
    log = Path(out.strip().splitlines()[-1].removeprefix("log: "))
    assert "WARNING contam.harness.engine.lanes: anthropic-m: STOPPED (auth)" in log.read_text(encoding="utf-8")


def test_verbose_shows_the_story_on_stderr_and_quiet_shows_none(capsys):
    log = logging.getLogger("contam.harness.engine.lanes")
    configure_logging(0)
    log.info("quiet line")
    assert capsys.readouterr().err == ""
    configure_logging(1)
    configure_logging(1)  # idempotent: one handler, one line
    log.info("loud line")
    log.debug("debug line")
    err = capsys.readouterr().err
    assert err.count("loud line") == 1 and "debug line" not in err
    configure_logging(2)
    log.debug("debug line")
    assert "debug line" in capsys.readouterr().err


def test_no_key_reaches_a_log_even_when_a_message_carries_one(tmp_path, capsys, monkeypatch):
    secret = "sk-this-is-a-long-secret-key"
    monkeypatch.setenv("OPENAI_API_KEY", secret)

    class Spec:
        provider, api_key_env, name = "openai", "OPENAI_API_KEY", "m"

    resolve_api_key(Spec())  # registers the key for redaction, as a provider does
    configure_logging(1)
    with run_log(tmp_path / "s.duckdb", "r1") as path:
        logging.getLogger("contam.providers.openai").info("header was %s", secret)
    assert secret not in path.read_text(encoding="utf-8") and "[REDACTED]" in path.read_text()
    assert secret not in capsys.readouterr().err
