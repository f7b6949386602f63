"""docs/reference/cli.md is generated from the commands' declarations (scripts/cli_reference.py):
it is never stale, and no argument goes without its help text."""

from __future__ import annotations

import pytest

from contam.harness.cli.parser import COMMANDS
from scripts import cli_reference


@pytest.fixture(autouse=True)
def hundred_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # the usage lines, as the script writes them


def test_the_committed_cli_reference_is_what_the_declarations_give():
    assert cli_reference.PAGE.read_text(encoding="utf-8") == cli_reference.reference(), (
        "docs/reference/cli.md is stale: run python scripts/cli_reference.py")


def test_every_argument_of_every_command_has_help_text():
    rows = [(command.name, shown) for command in COMMANDS
            for shown in cli_reference.arguments(command)]
    rows += [(f"probe {kind}", shown) for kind, spec in cli_reference.PROBES.items()
             for shown in cli_reference.probe_arguments(spec)]
    assert [f"{name} {shown.flag.flag}" for name, shown in rows if not shown.help] == []


def test_every_flag_of_a_command_has_its_row():
    page = cli_reference.reference()
    score = page.split("## contam score\n")[1].split("\n## ")[0]
    for flag in ("--store", "--metric", "--bertscore-layers", "--no-rescale", "--ray",
                 "-v, --verbose"):
        assert f"| `{flag}` |" in score
