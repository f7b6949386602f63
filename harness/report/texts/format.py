"""The report's building blocks: tables and sections, number formats, and Markdown escaping.

Percentages carry one decimal; p-values are written ``7.5 × 10⁻⁷²`` (from their log10 where a
double cannot hold them: a value that exists is never printed as a bound); an infinite odds
ratio is ``∞``; a statistic that is undefined is ``—``. :func:`user` makes a user- or
model-supplied value safe inside Markdown (no raw HTML, code, emphasis, table break or link) and
leaves it plain: no HTML entities, no backslash that changes nothing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any
from contam.harness.report.model import Report

__all__ = ["DASH", "contrast_names", "PNG_DPI", "is_missing", "Table", "Section", "fmt_pct", "fmt_ci", "fmt_num_ci", "fmt_p",
           "p_clause", "fmt_or", "fmt_num", "fmt_pp", "fmt_sides", "fmt_params", "plural", "md_cell",
           "user"]

DASH = "—"
PNG_DPI = 300  # the figures' resolution: print quality, and how the HTML works out their print size
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


# -- number formats -----------------------------------------------------------------------------

def is_missing(x: Any) -> bool:
    """None or NaN: a statistic that is undefined."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def fmt_pct(x: float | None) -> str:
    return DASH if is_missing(x) else f"{100 * x:.1f}%"


def fmt_ci(low: float | None, high: float | None) -> str:
    return DASH if is_missing(low) or is_missing(high) else f"[{100 * low:.1f}, {100 * high:.1f}]"


def fmt_num_ci(low: float | None, high: float | None) -> str:
    """An interval of a score (not a percentage): ``[0.412, 0.587]``."""
    return DASH if is_missing(low) or is_missing(high) else f"[{low:.3f}, {high:.3f}]"


def fmt_p(p: float | None, log10_p: float | None = None) -> str:
    """0.042, or 7.5 × 10⁻⁷² below 0.001. ``log10_p`` gives the digits of a p-value too small
    for a double (scipy's tails underflow to 0 below ~1e-308); without it such a p is a bound."""
    if is_missing(p):
        return DASH
    if p < _TINY and not is_missing(log10_p) and math.isfinite(log10_p):
        return _scientific(log10_p)
    if p == 0:
        return "< 10⁻³⁰⁰"
    if p >= 0.001:
        return f"{p:.3f}"
    mantissa, exponent = f"{p:.1e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


_TINY = 1e-300  # below this a double holds few digits or none


def _scientific(log10_value: float) -> str:
    """10^x as ``9.1 × 10⁻⁴³⁷``, one decimal in the mantissa."""
    exponent = math.floor(log10_value)
    mantissa = round(10 ** (log10_value - exponent), 1)
    if mantissa >= 10:
        mantissa, exponent = 1.0, exponent + 1
    return f"{mantissa:.1f} × 10{str(exponent).translate(_SUPERSCRIPT)}"


def p_clause(p: float | None, log10_p: float | None = None) -> str:
    """``p = 0.042`` in running text; ``p < 10⁻³⁰⁰`` only where no value can be computed."""
    text = fmt_p(p, log10_p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def fmt_or(x: float | str | None) -> str:
    if x == "inf":
        return "∞"
    return DASH if is_missing(x) else f"{x:.1f}"


def fmt_num(x: float | None, digits: int = 3) -> str:
    return DASH if is_missing(x) else f"{x:.{digits}f}"


def fmt_pp(x: float | None, signed: bool = False) -> str:
    """A difference of proportions in percentage points, as the gap table and figure 2 print it
    (``signed``: with its sign, ``+67.5 pp``, as the probes' contrasts print it)."""
    return DASH if is_missing(x) else f"{100 * x:{'+' if signed else ''}.1f} pp"


def fmt_sides(row: dict[str, Any], count: str, share: str) -> list[str]:
    """The documented and the undocumented share of a contrast row
    (:func:`contam.harness.report.inputs.cells.contrast_2x2`) with their counts: ``80.0% (8/10)``."""
    return [f"{fmt_pct(row[f'{side}_{share}'])} ({row[f'{side}_{count}']}/{row[f'{side}_n']})"
            for side in ("documented", "undocumented")]


def plural(n: int, word: str) -> str:
    """``1 test``, ``2 tests``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def contrast_names(report: Report) -> dict[str, str]:
    """``{"documented": A, "undocumented": B}``: the report's contrast, or the two sides' own names
    where it has none (then no section has rows of either side)."""
    return report.contrast or {"documented": "documented", "undocumented": "undocumented"}


# -- structure ----------------------------------------------------------------------------------

_NUMERIC = re.compile(r"^(?:[-+−]?\d|\[-?\d|<\s|∞$|—$|$)")


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]
    caption: str = ""
    name: str = ""  # what it holds, as the tables/ files are named (contam.harness.report.writers.tidy has its data)

    def numeric_columns(self) -> list[bool]:
        """Columns of numbers (dashes allowed, at least one number) are right-aligned; the first never is."""
        return [i > 0 and bool(self.rows) and all(_number_like(row[i]) for row in self.rows)
                and any(row[i] not in (DASH, "") for row in self.rows) for i in range(len(self.headers))]


def _number_like(cell: str) -> bool:
    """A number, interval, percentage or dash; not an id or a hash that happens to start with a digit."""
    return bool(_NUMERIC.match(cell)) and len(cell.split(" ")[0]) <= 24


@dataclass
class Section:
    heading: str
    paragraphs: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)


# Only what Markdown could read as markup: backslash, backtick, asterisk, underscore and pipe; a
# "<" that opens a tag or an autolink; a "&" that spells an entity; a "]" that opens a link target.
# An underscore between two letters or digits is no emphasis (CommonMark), so `r_pb` stays plain.
_MD_SPECIAL = re.compile(r"[\\`*|]|(?<![^\W_])_|_(?![^\W_])|<(?=[A-Za-z/!?])|&(?=#?\w+;)|\](?=\()")


def md_cell(text: str) -> str:
    """Plain, Markdown-safe text on one line: no raw HTML, code, emphasis, table break or inline
    link, with a backslash before only the characters that would start one (no HTML entities)."""
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), str(text)).replace("\n", " ")


def user(text: object) -> str:
    """A user- or model-supplied value inside a paragraph (see :func:`md_cell`; the HTML renderer
    undoes the Markdown escapes and HTML-escapes instead)."""
    return md_cell(str(text))


def fmt_params(params: dict[str, Any]) -> str:
    """``{"temperature": 0}`` -> ``temperature=0``; nested values as compact JSON-like text."""
    return ", ".join(f"{k}={v}" for k, v in params.items())
