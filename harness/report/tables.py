"""Every report table as a file a paper can use: ``tables/NN_name.csv`` and ``tables/NN_name.tex``.

The tables are the very ones report.md and report.html show
(:func:`harness.report.render.sections`), so the three never disagree. The LaTeX is a booktabs
``table`` (needs ``\\usepackage{booktabs}``) with LaTeX's specials escaped in every cell, numbers
right-aligned, and the report's Unicode (×, 10⁻⁷², κ, ρ, ∞, —) written as LaTeX, so that it
compiles with plain pdflatex.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from harness.report.format import Section, Table

__all__ = ["write_tables", "latex_table", "latex_text"]

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


def write_tables(sections: list[Section], folder: Path) -> list[Path]:
    """``NN_section[_k].csv`` and ``.tex`` per table, numbered in report order; returns the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    written, number = [], 0
    for section in sections:
        for k, table in enumerate(section.tables, start=1):
            number += 1
            suffix = f"_{k}" if len(section.tables) > 1 else ""
            stem = folder / f"{number:02d}_{_slug(section.heading)}{suffix}"
            with stem.with_suffix(".csv").open("w", newline="", encoding="utf-8") as handle:
                csv.writer(handle).writerows([table.headers, *table.rows])
            stem.with_suffix(".tex").write_text(latex_table(table, section.heading), encoding="utf-8")
            written += [stem.with_suffix(".csv"), stem.with_suffix(".tex")]
    return written
