"""`contam` subcommands. Thin: parse (:mod:`contam.harness.cli.parser`), call one job
(:mod:`contam.harness.cli.handlers`), print (:mod:`contam.harness.cli.output`), exit status.

Each subcommand's work lives in its own module and is imported only when that subcommand runs,
so `contam sql` never pays for importing torch, nor `contam --version` for DuckDB or pandas
(scripts/bench_startup.py times both; tests/test_startup.py keeps them light).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from contam.harness.cli.handlers import HANDLERS, emulator_settings_from_args
from contam.harness.cli.output import print_result, say
from contam.harness.cli.parser import EXAMPLES, OneLineParser, build_parser, parse_args
from contam.harness.errors import LinedError, UserError, first_line

__all__ = ["main", "build_parser", "parse_args", "print_result", "OneLineParser", "HANDLERS",
           "EXAMPLES", "emulator_settings_from_args"]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return _handle(args)
    except KeyboardInterrupt:  # at any moment after parsing, DuckDB's import included
        print(f"contam {args.command}: interrupted", file=sys.stderr)
        return 130


def _handle(args: argparse.Namespace) -> int:
    """The subcommand's handler; a user's mistake or a broken store as its one line, status 2."""
    import duckdb  # after parsing: --version and --help end there, without it

    from contam.harness.logs import configure_logging

    configure_logging(args.verbose)
    try:
        return HANDLERS[args.command](args)
    except UserError as exc:
        _say_error(args.command, exc)
        return 2
    except duckdb.Error as exc:  # a store that broke mid-command (cut off, its folder read-only)
        where = getattr(args, "store", None) or "the store"
        say(f"contam {args.command}: {where}: store error ({first_line(exc)})", sys.stderr)
        return 2


def _say_error(command: str, exc: UserError) -> None:
    """One line, or each of a LinedError's own lines (each still with hostile characters escaped)."""
    lines = str(exc).splitlines() if isinstance(exc, LinedError) else [str(exc)]
    say(f"contam {command}: {lines[0] if lines else ''}", sys.stderr)
    for line in lines[1:]:
        say(line, sys.stderr)
