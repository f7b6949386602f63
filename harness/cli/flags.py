"""argparse arguments from declared options (:mod:`harness.declare`): each field of a command's
options dataclass becomes its flag, with the destination of the field's name, so that
:func:`harness.declare.from_args` reads the parsed line back into the dataclass."""

from __future__ import annotations

import argparse
from dataclasses import MISSING, Field
from typing import Any

from harness.declare import NOT_GIVEN, Flag, declared

__all__ = ["add_options", "add_flag"]

_PASSED_AS_IS = ("metavar", "choices", "type", "action", "nargs", "const")


def add_options(parser: argparse.ArgumentParser, cls: type, *, skip: tuple[str, ...] = ()) -> None:
    """Every declared field of ``cls`` as a flag of ``parser``, in declaration order. The class
    may give a shared flag its own help (``CLI_HELP``) or leave fields off (``CLI_SKIP``)."""
    helps: dict[str, str] = getattr(cls, "CLI_HELP", {})
    skipped = set(skip) | set(getattr(cls, "CLI_SKIP", ()))
    groups: dict[str, Any] = {}
    for f, flag in declared(cls):
        if f.name in skipped:
            continue
        if flag.group is not None and flag.group not in groups:
            groups[flag.group] = parser.add_mutually_exclusive_group()
        add_flag(groups.get(flag.group, parser), flag, dest=f.name, default=_field_default(f), help=helps.get(f.name))


def add_flag(parser: Any, flag: Flag, *, dest: str | None = None, default: Any = None,
             help: str | None = None) -> None:
    """One argument; a positional one (no leading ``-``) is its own destination."""
    keywords = {name: getattr(flag, name) for name in _PASSED_AS_IS if getattr(flag, name) is not None}
    keywords["default"] = default if flag.cli_default is NOT_GIVEN else flag.cli_default
    if flag.required:
        keywords["required"] = True
    if (help or flag.help) is not None:
        keywords["help"] = (help or flag.help).replace("%", "%%")  # no %(default)s in our help
    if flag.flag.startswith("-"):
        keywords["dest"] = dest or flag.flag.lstrip("-").replace("-", "_")
        if flag.takes_value and flag.metavar is None and flag.choices is None:
            keywords["metavar"] = flag.flag.lstrip("-").replace("-", "_").upper()  # not the dest's
    parser.add_argument(flag.flag, **keywords)


def _field_default(f: Field) -> Any:
    return None if f.default is MISSING else f.default
