"""Errors a user can cause. The CLI prints them as one line, without a traceback."""

from __future__ import annotations

__all__ = ["UserError", "LinedError", "InputError", "first_line", "cause_line"]


class UserError(Exception):
    """A mistake the user can fix: bad arguments, a missing file, a locked store."""


class LinedError(UserError):
    """A UserError whose message keeps its own lines (DuckDB's hint and caret lines under a
    failed query): the CLI prints each of them rather than one line with ``\\n`` in it."""


class InputError(UserError):
    """A refused input file. The message names the file and the 1-based line."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}")
        self.path, self.line, self.problem = path, line, problem


def first_line(exc: BaseException) -> str:
    """An exception's first line (DuckDB's and torch's messages go on with context lines); its
    type's name when the message is empty."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def cause_line(exc: BaseException) -> str:
    """``Type: first line`` of what went wrong: an exception group (anyio's "unhandled errors in a
    TaskGroup", which names nothing) is read through to the first exception inside it."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {first_line(exc)}"
