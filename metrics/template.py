"""A study's templates (``[prompt] user``, ``[probes] text``): ``{column}`` fields filled from one
item's own columns, ``{{`` and ``}}`` literal braces. Shared by ``contam run`` and the probes.

A field is a bare column name: no format spec, conversion, attribute or index (``{a:>5}``,
``{a!r}``, ``{a.b}``, ``{a[0]}``), so a template can reach nothing but its item's values. The
paper's ``Game: {title}\\nQuestion: {question}`` fills to the very bytes ``str.format`` gives.
See ARCHITECTURE.md, "A study's settings".
"""

from __future__ import annotations

import difflib
import json
import string
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["template_fields", "fill_template", "unknown_field_problem", "value_text"]

_FORMATTER = string.Formatter()


def template_fields(template: str) -> tuple[str, ...]:
    """The column names ``template`` fills, in order, once each; ValueError names what is wrong."""
    names: list[str] = []
    for _, name, spec, conversion in _parsed(template):
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise ValueError(f"field {{{name}{'!' + conversion if conversion else ''}"
                             f"{':' + spec if spec else ''}}} is not a bare column name "
                             "(write {column}; {{ and }} for literal braces)")
        if name not in names:
            names.append(name)
    return tuple(names)


def fill_template(template: str, values: Mapping[str, Any]) -> str:
    """``template`` with each field replaced by the item's value (a missing one as blank)."""
    return "".join(literal + (value_text(values.get(name)) if name is not None else "")
                   for literal, name, _, _ in _parsed(template))


def value_text(value: Any) -> str:
    """A column's value as prompt text: text as it is, a number as written, a list as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def unknown_field_problem(name: str, columns: Iterable[str]) -> str:
    """``field {x} is not a column of the items (columns: ...; did you mean {y}?)``."""
    present = list(columns)
    close = difflib.get_close_matches(name, present, n=1)
    hint = f"; did you mean {{{close[0]}}}?" if close else ""
    return f"field {{{name}}} is not a column of the items (columns: {', '.join(present)}{hint})"


def _parsed(template: str) -> list[tuple[str, str | None, str | None, str | None]]:
    try:
        return list(_FORMATTER.parse(template))
    except ValueError as exc:  # a lone { or }
        raise ValueError(f"{exc} (write {{{{ and }}}} for literal braces)") from None
