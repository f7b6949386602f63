"""Where a key sits in a TOML file, for the config's errors: tomllib parses without positions, so
the line is found again in the text, by the table's header and the key's own ``key =``. A key
this cannot place (a dotted key, one inside an inline table) is named without a line."""

from __future__ import annotations

import re

__all__ = ["line_of"]

_HEADER = re.compile(r"^\s*\[(\[?)\s*([A-Za-z0-9_.\"' -]+?)\s*\]\]?\s*(#.*)?$")


def line_of(text: str, where: str, key: str | None) -> int | None:
    """The 1-based line of ``key`` in the table ``where`` (``[study]``, ``[[models]] #2``,
    ``top level``); of the table's header when ``key`` is None; None when not found."""
    table, number = _table(where)
    seen, inside = 0, table == ""
    for n, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            seen += header.group(2).strip("\"'") == table
            inside = header.group(2).strip("\"'") == table and seen == number
            if key is None and inside:
                return n
            if table == "" and key is not None and header.group(2) == key:
                return n  # a misspelt table: its header is where it is
            continue
        if inside and key is not None and re.match(rf"""^\s*["']?{re.escape(key)}["']?\s*=""", line):
            return n
    return None


def _table(where: str) -> tuple[str, int]:
    """``[[models]] #2`` -> ("models", 2); ``[study]`` -> ("study", 1); ``top level`` -> ("", 1)."""
    found = re.fullmatch(r"\[\[?([^\]]+)\]\]?(?: #(\d+))?", where)
    return (found.group(1), int(found.group(2) or 1)) if found else ("", 1)
