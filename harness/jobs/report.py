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

from contam.harness.declare import flag_of, options_from
from contam.harness.errors import UserError
from contam.harness.jobs.options.report import ReportOptions
from contam.harness.report.analysis import build_report, parse_contrast
from contam.harness.report.model import Report
from contam.harness.report.writers.output import render, report_json, write_files
from contam.harness.report.inputs.study_settings import study_inputs
from contam.harness.store import DEFAULT_STORE
from contam.harness.store.access import reading

__all__ = ["report", "ReportOptions", "ReportResult", "write_report", "report_json", "default_out_dir", "render"]


@dataclass(kw_only=True)
class ReportResult:
    """The report, where its files went (none with ``format`` alone), and ``format``'s text."""

    report: Report
    out: Path | None = None
    written: list[Path] = field(default_factory=list)
    text: str | None = None


def report(*, store: str | Path = DEFAULT_STORE, options: ReportOptions | None = None,
           **keywords: Any) -> ReportResult:
    """``contam report``: see the module docstring for where it writes; ``options`` (or its fields
    as keywords: ``out=``, ``format=``, ``correct=`` ...) are the command line's; ``correct``
    overrides the study's ``[study] correct`` (:mod:`contam.metrics.outcome`)."""
    o = options_from(ReportOptions, options, keywords)
    with reading(store, lean=True) as opened:  # through the job holding the store, if one does
        built = build_report(opened, human=o.human, judge=o.judge, by=o.by, correct=o.correct,
                             contrast=None if o.contrast is None else parse_contrast(o.contrast),
                             study=study_inputs(opened, o.config))
    result = ReportResult(report=built)
    if o.out or not o.format:
        result.out = Path(o.out) if o.out else default_out_dir(store)
        result.written = write_report(built, result.out, o.figure_titles)
    if o.format:
        result.text = render(built, o.format, o.figure_titles)
    return result


def default_out_dir(store_path: str | Path) -> Path:
    path = Path(store_path)
    return path.with_name(f"{path.stem}_report")


def write_report(report: Report, out: Path, figure_titles: bool = False) -> list[Path]:
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
        raise UserError(f"{out}: is a file, not a folder (give {flag_of(ReportOptions, 'out')} a "
                        "folder)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{out}: cannot create the report folder ({exc.strerror or exc})") from None
