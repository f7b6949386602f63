"""`contam --help` and every command's help: the wording recorded in tests/data/cli_help.json
(the help as it read when each option came to be declared once, 100 columns wide), and, as the
last line, the docs page that covers the command."""

from __future__ import annotations

import json
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import pytest

from contam.harness.cli import parse_args
from contam.harness.cli.parser import COMMANDS, TOP_DOCS
from contam.metrics.probe_registry import PROBES

ROOT = Path(__file__).resolve().parents[1]
RECORDED = json.loads((ROOT / "tests/data/cli_help.json").read_text(encoding="utf-8"))
DOCS = {command.name: command.docs for command in COMMANDS}
ALL = [[], *([c.name] for c in COMMANDS), *(["probe", kind] for kind in PROBES)]


def help_of(words: list[str]) -> str:
    out = StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit) as exited:
        parse_args([*words, "--help"])
    assert exited.value.code == 0
    return out.getvalue()


@pytest.fixture(autouse=True)
def hundred_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps at the terminal's width


@pytest.mark.parametrize("words", ALL, ids=lambda words: " ".join(words) or "contam")
def test_each_help_keeps_its_recorded_wording_and_ends_with_its_docs_page(words):
    text = help_of(words)
    docs = DOCS[words[0]] if words else TOP_DOCS
    assert text.endswith(f"\n\ndocs: {docs}\n")
    assert text.removesuffix(f"\ndocs: {docs}\n") == RECORDED[" ".join(["contam", *words])]


def test_every_command_is_recorded():
    assert set(RECORDED) == {" ".join(["contam", *words]) for words in ALL}
