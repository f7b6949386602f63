"""argparse arguments from declared options (:mod:`contam.harness.declare`): each field of a command's
options dataclass becomes its flag, with the destination of the field's name, so that
:func:`contam.harness.declare.from_args` reads the parsed line back into the dataclass."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import MISSING, Field, dataclass
from typing import Any

from contam.harness.declare import NOT_GIVEN, Flag, declared

__all__ = ["add_options", "add_flag", "command_flags", "ShownFlag", "metavar_of", "parser_default"]

_PASSED_AS_IS = ("metavar", "choices", "type", "action", "nargs", "const")


def add_options(parser: argparse.ArgumentParser, cls: type, *, skip: tuple[str, ...] = ()) -> None:
    """Every declared field of ``cls`` as a flag of ``parser``, in declaration order."""
    groups: dict[str, Any] = {}
    for shown in command_flags(cls, skip=skip):
        group = shown.flag.group
        if group is not None and group not in groups:
            groups[group] = parser.add_mutually_exclusive_group()
        add_flag(groups.get(group, parser), shown.flag, dest=shown.dest, default=shown.default,
                 help=shown.help)


@dataclass(frozen=True)
class ShownFlag:
    """A flag as one command shows it: its destination, parser default and help."""

    flag: Flag
    dest: str | None
    default: Any
    help: str | None

    @property
    def value(self) -> str:
        """What follows the flag on the command line (``NAME``, ``{a,b}``, ``[ADDRESS]``), or ''."""
        return metavar_of(self.flag)


def command_flags(cls: type, *, skip: tuple[str, ...] = ()) -> Iterator[ShownFlag]:
    """The declared fields of ``cls`` that this command shows. The class may give a shared flag
    its own help (``CLI_HELP``) or leave fields off (``CLI_SKIP``)."""
    helps: dict[str, str] = getattr(cls, "CLI_HELP", {})
    skipped = set(skip) | set(getattr(cls, "CLI_SKIP", ()))
    for f, flag in declared(cls):
        if f.name not in skipped:
            yield ShownFlag(flag, f.name, parser_default(flag, _field_default(f)),
                            helps.get(f.name) or flag.help_text())


def parser_default(flag: Flag, default: Any = None) -> Any:
    return default if flag.cli_default is NOT_GIVEN else flag.cli_default


def metavar_of(flag: Flag) -> str:
    """What argparse shows after the flag: its metavar, its choices, or its name in capitals."""
    if not flag.takes_value:
        return ""
    name = flag.metavar or ("{" + ",".join(flag.choices) + "}" if flag.choices else _name_of(flag))
    return f"[{name}]" if flag.nargs == "?" and flag.flag.startswith("-") else name


def _name_of(flag: Flag) -> str:
    return flag.flag.lstrip("-").replace("-", "_").upper() if flag.flag.startswith("-") else flag.flag


def add_flag(parser: Any, flag: Flag, *, dest: str | None = None, default: Any = None,
             help: str | None = None) -> None:
    """One argument; a positional one (no leading ``-``) is its own destination."""
    keywords = {name: getattr(flag, name) for name in _PASSED_AS_IS if getattr(flag, name) is not None}
    keywords["default"] = parser_default(flag, default)
    if flag.required:
        keywords["required"] = True
    text = help or flag.help_text()
    if text is not None:
        keywords["help"] = text.replace("%", "%%")  # no %(default)s in our help
    if flag.flag.startswith("-"):
        keywords["dest"] = dest or flag.flag.lstrip("-").replace("-", "_")
        if flag.takes_value and flag.metavar is None and flag.choices is None:
            keywords["metavar"] = _name_of(flag)  # the flag's name, not the field's
    parser.add_argument(flag.flag, **keywords)


def _field_default(f: Field) -> Any:
    return None if f.default is MISSING else f.default
