"""Global flags (-v) go before the subcommand or after it: `contam -v run ...` as `contam run ... -v`."""

from __future__ import annotations

import pytest

from contam.harness.cli import parse_args
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.logs import configure_logging
from tests.runkit import model_entry, write_config


@pytest.mark.parametrize(("argv", "verbosity"), [
    (["-v", "sql", "select 1"], 1),
    (["sql", "select 1", "-v"], 1),
    (["--verbose", "run", "study.toml", "--limit", "3"], 1),
    (["-vv", "report"], 2),
    (["-v", "score", "-v"], 2),  # counted on both sides
    (["sql", "select 1"], 0),
])
def test_verbose_counts_before_and_after_the_subcommand(argv, verbosity):
    args = parse_args(argv)
    assert args.verbose == verbosity
    assert not hasattr(args, "verbose_before")  # one count for the rest of the CLI to read


@pytest.mark.parametrize(("argv", "verbosity"), [
    (["-v", "probe", "cdd", "study.toml"], 1),
    (["probe", "-v", "cdd", "study.toml"], 1),  # between the command and its kind: was dropped
    (["probe", "cdd", "study.toml", "-v"], 1),
    (["probe", "-v", "min-k", "study.toml", "-v"], 2),
    (["-v", "probe", "-v", "cdd", "study.toml", "-v"], 3),  # counted at every level
    (["probe", "cdd", "study.toml"], 0),
])
def test_verbose_counts_before_between_and_after_a_probes_kind(argv, verbosity):
    args = parse_args(argv)
    assert args.verbose == verbosity
    assert not hasattr(args, "verbose_before") and not hasattr(args, "verbose_kind")


@pytest.mark.parametrize("where", ["before", "after"])
def test_contam_dash_v_run_logs_the_run_on_stderr(where, tmp_path, contam):
    with run_emulator(EmulatorSettings()) as emu:
        config = write_config(tmp_path, [model_entry("ollama", emu)], items=2)
        args = ["run", config, "--store", tmp_path / "s.duckdb", "--no-progress"]
        status, out, err = contam(*(["-v", *args] if where == "before" else [*args, "-v"]))
    configure_logging(0)  # the console handler back to silent for the tests after this one
    assert status == 0, err
    assert "ollama-m: 2/2 answered" in out
    assert " INFO contam.harness." in err  # -v took effect: the run's story on stderr
