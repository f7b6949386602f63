"""A failure says what went wrong in one line: argparse's errors for every command, and an error
that arrives wrapped in an exception group (anyio's "unhandled errors in a TaskGroup")."""

from __future__ import annotations

import pytest

from contam.harness.cli import HANDLERS, main
from contam.harness.errors import cause_line
from contam.providers.base import Provider, Reply, Request
from contam.providers.registry import create_provider
from tests.runkit import model_entry, run_inprocess, write_config


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    captured = capsys.readouterr()
    return done.value.code, captured.out, captured.err


def test_a_bad_limit_is_one_line_naming_the_option_and_the_value(capsys):
    status, out, err = run_cli(capsys, "run", "study.toml", "--limit", "abc")
    assert (status, out, err) == (2, "", "contam run: --limit: invalid int value: 'abc'\n")


@pytest.mark.parametrize(("args", "line"), [
    (["judge", "c.toml", "--limit", "1.5"], "contam judge: --limit: invalid int value: '1.5'"),
    (["run"], "contam run: the following arguments are required: config"),
    (["import", "things", "f.csv"], "contam import: kind: invalid choice: 'things' (choose from "
                                    "'items', 'answers', 'labels')"),
    (["score", "--bertscore-layers", "x"], "contam score: --bertscore-layers: invalid int value: 'x'"),
    (["report", "--format", "xml"], "contam report: --format: invalid choice: 'xml' (choose from "
                                    "'json', 'md', 'html')"),
    (["emulator", "--port", "http"], "contam emulator: --port: invalid int value: 'http'"),
    (["bench", "--requests", "many"], "contam bench: --requests: invalid int value: 'many'"),
    (["cost", "--items", "\x1b[2J"], r"contam cost: --items: invalid int value: '\x1b[2J'"),
    (["frobnicate"], "contam: COMMAND: invalid choice: 'frobnicate' (choose from "
                     + ", ".join(repr(name) for name in HANDLERS) + ")"),
    ([], "contam: the following arguments are required: COMMAND"),
])
def test_every_argument_error_is_one_line_with_exit_status_2(capsys, args, line):
    status, out, err = run_cli(capsys, *args)
    assert (status, out, err) == (2, "", line + "\n")


def test_help_still_shows_the_usage(capsys):
    status, out, _ = run_cli(capsys, "run", "--help")
    assert status == 0 and out.startswith("usage: contam run") and "--limit LIMIT" in out


def test_an_exception_group_is_read_through_to_its_cause():
    group = ExceptionGroup("unhandled errors in a TaskGroup",
                           [ExceptionGroup("inner", [OverflowError("connect(): port must be 0-65535.")])])
    assert cause_line(group) == "OverflowError: connect(): port must be 0-65535."
    assert cause_line(ValueError("bad\nsecond line")) == "ValueError: bad"


class _Grouped(Provider):
    """Raises what httpx lets through for a port beyond 65535: anyio's exception group."""

    def __init__(self, inner: Provider) -> None:
        self.spec = inner.spec

    async def generate(self, request: Request) -> Reply:
        raise ExceptionGroup("unhandled errors in a TaskGroup",
                             [OverflowError("connect(): port must be 0-65535.")])


def test_a_run_that_meets_an_exception_group_names_its_cause_in_one_line(tmp_path, keys, emulator):
    config = write_config(tmp_path, [model_entry("openai", emulator())], items=2)
    result = run_inprocess(config, tmp_path / "s.duckdb",
                           provider_factory=lambda spec, client: _Grouped(create_provider(spec, client)))
    assert result.status == 1
    summary = next(line for line in result.out.splitlines() if line.startswith("openai-m: 0/2"))
    assert summary.endswith("STOPPED (internal error): model 'openai-m': OverflowError: "
                            "connect(): port must be 0-65535.")
    assert "ExceptionGroup" not in result.out + result.err
