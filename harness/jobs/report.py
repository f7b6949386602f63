"""`contam report`: a store -> report.json, report.md, report.html, the figures and tables/.

Where it writes: ``--out DIR`` if given; with ``--format`` alone it prints that one format to stdout
and writes nothing; with neither, it writes to a folder named after the store, beside it
(``runs/contam.duckdb`` -> ``runs/contam_report/``).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.report.analysis import build_report, parse_contrast
from harness.report.output import render, report_json, write_files
from harness.report.study_inputs import study_inputs
from harness.store import DEFAULT_STORE
from harness.store.access import reading

__all__ = ["report", "ReportResult", "write_report", "report_json", "default_out_dir", "render"]

@dataclass(kw_only=True)
class ReportResult:
    """The report, where its files went (none with ``format`` alone), and ``format``'s text."""

    report: dict[str, Any]
    out: Path | None = None
    written: list[Path] = field(default_factory=list)
    text: str | None = None


def report(*, store: str | Path = DEFAULT_STORE, out: str | Path | None = None,
           format: str | None = None, contrast: str | None = None, human: str | None = None,
           judge: str | None = None, figure_titles: bool = False,
           config: str | Path | None = None, by: str | None = None,
           correct: str | None = None) -> ReportResult:
    """``contam report``: see the module docstring for where it writes; ``config``: the study's
    settings (else the newest run's record, :mod:`harness.report.study_inputs`); ``by``: an item
    column to break accuracy down by; ``correct``: what makes an answer correct, overriding the
    study's ``[study] correct`` (:mod:`metrics.outcome`)."""
    with reading(store) as opened:  # through the job holding the store, if one does
        built = build_report(opened, contrast=None if contrast is None else parse_contrast(contrast),
                             human=human, judge=judge,
                             study=study_inputs(opened, config), by=by, correct=correct)
    result = ReportResult(report=built)
    if out or not format:
        result.out = Path(out) if out else default_out_dir(store)
        result.written = write_report(built, result.out, figure_titles)
    if format:
        result.text = render(built, format, figure_titles)
    return result


def default_out_dir(store_path: str | Path) -> Path:
    path = Path(store_path)
    return path.with_name(f"{path.stem}_report")


def write_report(report: dict[str, Any], out: Path, figure_titles: bool = False) -> list[Path]:
    """All three formats, every figure as PNG and PDF, every table as CSV and LaTeX; returns the
    paths written. Everything is written into a scratch folder inside ``out`` first and then
    renamed into place, so a failure leaves the folder as it was."""
    _make_folder(out)
    try:
        with tempfile.TemporaryDirectory(dir=out, prefix=".writing-") as scratch:
            write_files(report, Path(scratch), figure_titles)
            return _move_into(Path(scratch), out)
    except OSError as exc:
        raise UserError(f"{out}: cannot write the report there ({exc.strerror or exc})") from None


def _move_into(scratch: Path, out: Path) -> list[Path]:
    """Rename every file written in ``scratch`` to the same place under ``out``."""
    moved = []
    for path in sorted(p for p in scratch.rglob("*") if p.is_file()):
        target = out / path.relative_to(scratch)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
        moved.append(target)
    return moved


def _make_folder(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: is a file, not a folder (give --out a folder)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{out}: cannot create the report folder ({exc.strerror or exc})") from None
