"""Each command's options declared once. A field of a command's options dataclass carries, in its
metadata, how it appears on the command line (:class:`Flag`: the flag, its help, metavar,
choices ...); `contam.harness.cli` builds the argparse parser from those fields, the job takes the
dataclass, and `contam.harness.api` takes its fields as keywords. A flag is spelled only in its field
(other modules name it through :func:`flag_of`)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import Field, dataclass, field, fields
from typing import Any

__all__ = ["Flag", "NOT_GIVEN", "option", "declared", "flag_of", "from_args", "options_from",
           "no_progress_option", "progress_option"]

_KEY = "contam.flag"
NOT_GIVEN: Any = object()  # a Flag's cli_default when the parser takes the field's default


@dataclass(frozen=True)
class Flag:
    """One command-line argument as argparse takes it. ``cli_default`` is the parser's default
    where it differs from the field's; ``convert`` turns the parsed value into the field's."""

    flag: str
    help: str | Callable[[], str] | None = None  # a callable: computed when the parser is built
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    type: Callable[[str], Any] | None = None
    action: str | None = None
    nargs: str | None = None
    const: Any = None
    required: bool = False
    cli_default: Any = NOT_GIVEN
    convert: Callable[[Any], Any] | None = None
    group: str | None = None  # the flags of one group exclude each other

    def help_text(self) -> str | None:
        """The help, computed now if it is computed (from a registry, say)."""
        return self.help() if callable(self.help) else self.help

    @property
    def takes_value(self) -> bool:
        return self.action not in ("store_true", "store_false", "count", "version")


def option(flag: str, *, default: Any = None, factory: Callable[[], Any] | None = None,
           **how: Any) -> Any:
    """A dataclass field that is also the command line's ``flag`` (``how``: :class:`Flag`'s)."""
    metadata = {_KEY: Flag(flag, **how)}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def declared(cls: type) -> Iterator[tuple[Field, Flag]]:
    """The fields of an options class that are on the command line, in declaration order."""
    for f in fields(cls):
        if _KEY in f.metadata:
            yield f, f.metadata[_KEY]


def flag_of(cls: type, name: str) -> str:
    """The flag of field ``name`` (for messages: ``--overlap 2: a fraction ...``)."""
    return next(flag.flag for f, flag in declared(cls) if f.name == name)


def from_args(cls: type, args: Any, **given: Any) -> Any:
    """``cls`` from a parsed command line (argparse's namespace holds each field by its name;
    a flag this command leaves off keeps the field's default); ``given``: the fields that do
    not come from flags."""
    values = {f.name: _converted(flag, getattr(args, f.name)) for f, flag in declared(cls)
              if hasattr(args, f.name)}
    return cls(**values, **given)


def _converted(flag: Flag, value: Any) -> Any:
    return flag.convert(value) if flag.convert is not None else value


def options_from(cls: type, options: Any, keywords: dict[str, Any]) -> Any:
    """A job's ``options`` object, or one made of the API's keywords (the class's fields)."""
    if options is not None and keywords:
        raise TypeError(f"give options= or keywords ({', '.join(keywords)}), not both")
    return options if options is not None else cls(**keywords)


_NO_PROGRESS = "--no-progress"
_NO_PROGRESS_HELP = "plain periodic log lines instead of the live display"


def no_progress_option() -> Any:
    """``no_progress``: the live display off (a lane job's)."""
    return option(_NO_PROGRESS, default=False, action="store_true", help=_NO_PROGRESS_HELP)


def progress_option() -> Any:
    """``progress``: a progress bar on stderr; off from Python, on from a terminal's command
    line unless ``--no-progress``."""
    return option(_NO_PROGRESS, default=False, action="store_false", cli_default=True,
                  convert=lambda on: on and sys.stderr.isatty(), help=_NO_PROGRESS_HELP)
