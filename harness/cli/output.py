"""How `contam` prints: a lane job's summary and problems, and one line at a time with hostile
characters shown as escapes and long lines wrapped at words on a terminal."""

from __future__ import annotations

import os
import sys
import textwrap
from typing import Any, TextIO

from contam.harness.text import visible

__all__ = ["print_result", "say", "terminal_width"]


def print_result(result: Any, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """A lane job's summary on stdout, its problems on stderr; returns its exit status."""
    for line in result.summary:
        say(line, out or sys.stdout)
    for line in result.problems:
        say(line, err or sys.stderr)
    if result.log_path is not None:
        say(f"log: {result.log_path}", out or sys.stdout)
    return result.exit_status


def say(line: str, file: TextIO | None = None) -> None:
    """One line for the terminal: names and messages from files, configs and servers may hold
    ESC or bidi characters, shown as escapes (``\\x1b``, ``\\u202e``) rather than obeyed. On a
    terminal a line wider than it wraps at words, its continuation indented (the terminal would
    cut words); into a pipe or a file it stays one line."""
    file = file or sys.stdout
    text = visible(line, keep_newlines=False)
    width = terminal_width(file)
    if width and len(text) > width:
        text = "\n".join(textwrap.wrap(text, width=width, subsequent_indent="  ",
                                       break_long_words=False, break_on_hyphens=False))
    print(text, file=file)


def terminal_width(file: TextIO) -> int | None:
    """The columns of the terminal ``file`` writes to; None when it is not a terminal."""
    try:
        return os.get_terminal_size(file.fileno()).columns if file.isatty() else None
    except (AttributeError, OSError, ValueError):  # a StringIO, a closed or odd stream
        return None
