"""Every report table as files a paper and an analysis can use, named by what they hold:
``tables/NAME.tex`` (the table as report.md shows it, a booktabs LaTeX ``table``) and
``tables/NAME.csv`` (its numbers as tidy data, :mod:`contam.harness.report.writers.tidy`), plus
``tables/index.csv`` saying which section each file belongs to.

The LaTeX tables are the very ones report.md and report.html show
(:func:`contam.harness.report.texts.markdown.sections`), so the three never disagree; LaTeX's specials are
escaped in every cell, numbers right-aligned, and the report's Unicode (×, 10⁻⁷², κ, ρ, ∞, —)
written as LaTeX, so that it compiles with plain pdflatex (needs ``\\usepackage{booktabs}``).
The CSVs read straight into pandas (``pd.read_csv``) and R (``read.csv``): numeric columns hold
plain numbers (``inf`` for an infinite odds ratio, an empty field where a statistic is undefined),
lists are joined with ``; `` and parameters written as JSON. A table without tidy data (one a
section adds without a name) is written as it is displayed.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import Any

import orjson

from contam.harness.report.model import Report
from contam.harness.report.texts.format import Section, Table
from contam.harness.report.writers.tidy import TEXT_ONLY, tidy_tables

__all__ = ["write_tables", "latex_table", "latex_text", "csv_value"]

_SPECIALS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
}
_UNICODE = {
    "×": r"$\times$", "—": "---", "–": "--", "−": "$-$", "κ": r"$\kappa$", "ρ": r"$\rho$",
    "χ": r"$\chi$", "²": "$^2$", "∞": r"$\infty$", "Δ": r"$\Delta$", "↓": r"$\downarrow$",
    "→": r"$\rightarrow$", "≥": r"$\geq$", "≤": r"$\leq$", "±": r"$\pm$", "…": r"\ldots{}",
}
_SUPERSCRIPT_RUN = re.compile("([⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)")
_FROM_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


def latex_text(text: str) -> str:
    """Plain text -> LaTeX: specials escaped, ``10⁻⁷²`` as ``10$^{-72}$``."""
    parts = _SUPERSCRIPT_RUN.split(str(text))
    return "".join(f"$^{{{p.translate(_FROM_SUPERSCRIPT)}}}$" if i % 2 else
                   "".join(_SPECIALS.get(c) or _UNICODE.get(c) or c for c in p)
                   for i, p in enumerate(parts))


def latex_table(table: Table, heading: str) -> str:
    spec = "".join("r" if numeric else "l" for numeric in table.numeric_columns())
    line = " & ".join
    body = [line(latex_text(c) for c in row) + r" \\" for row in table.rows]
    caption = latex_text(f"{heading}. {table.caption}" if table.caption else heading)
    return "\n".join([
        f"% contam report: {latex_text(heading)} (needs \\usepackage{{booktabs}})",
        r"\begin{table}[htbp]", r"\centering", rf"\caption{{{caption}}}", rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule", line(latex_text(h) for h in table.headers) + r" \\", r"\midrule",
        *body, r"\bottomrule", r"\end{tabular}", r"\end{table}", ""])


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "table"


def write_tables(report: Report, sections: list[Section], folder: Path) -> list[Path]:
    """``NAME.tex`` and ``NAME.csv`` per table, the tidy-only CSVs, and ``index.csv``; returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    tidy, written, index = tidy_tables(report), [], []
    for section in sections:
        for table in section.tables:
            stem = _unique(table.name or _slug(section.heading), index)
            (folder / f"{stem}.tex").write_text(latex_table(table, section.heading), encoding="utf-8")
            rows = tidy.pop(table.name, None) if table.name else None
            _write_csv(folder / f"{stem}.csv", rows if rows is not None else _display_rows(table))
            index.append({"name": stem, "section": section.heading, "caption": table.caption,
                          "latex": f"{stem}.tex", "tidy": rows is not None})
            written += [folder / f"{stem}.tex", folder / f"{stem}.csv"]
    for name, rows in tidy.items():  # numbers the report states in its text, not in a table
        _write_csv(folder / f"{name}.csv", rows)
        index.append({"name": name, "section": "", "caption": TEXT_ONLY.get(name, ""), "latex": None,
                      "tidy": True})
        written.append(folder / f"{name}.csv")
    _write_csv(folder / "index.csv", index)
    return [*written, folder / "index.csv"]


def _unique(stem: str, index: list[dict]) -> str:
    """``stem``, or ``stem_2``, ``stem_3``, ... where a file of that name is already written."""
    taken, name, k = {entry["name"] for entry in index}, stem, 1
    while name in taken:
        k += 1
        name = f"{stem}_{k}"
    return name


def _display_rows(table: Table) -> list[dict[str, str]]:
    return [dict(zip(table.headers, row)) for row in table.rows]


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows([csv_value(row.get(c)) for c in columns] for row in rows)


def csv_value(value: Any) -> str:
    """A field pandas and R read as the value: numbers as Python writes them (``inf``, ``-inf``),
    None and NaN empty, True/False as ``TRUE``/``FALSE``, lists joined, mappings as JSON."""
    value = value.item() if hasattr(value, "item") and not isinstance(value, (list, dict, str)) else value
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (list, tuple)):
        return "; ".join(csv_value(v) for v in value)
    if isinstance(value, dict):
        return orjson.dumps(value).decode()
    return _inert(str(value)) if isinstance(value, str) else str(value)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _inert(text: str) -> str:
    """Text a spreadsheet would run as a formula (a model name or an answer such as
    ``=HYPERLINK(...)``) behind a leading ``'``, as OWASP advises for CSV injection; text that is
    a number (``-0.12``, ``-inf``) stays as it is, so pandas and R still read a number."""
    if not text.startswith(_FORMULA_START) or text == "-" or _is_number(text):
        return text
    return "'" + text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
