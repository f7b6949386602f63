"""The report as text and files: report.json's bytes, one format as text, every figure's PNG, and
everything `contam report` writes into a folder (its job, harness/jobs/report.py, makes that atomic).
ARCHITECTURE.md, The report."""

from __future__ import annotations

from pathlib import Path

import orjson

from contam.harness.report.model import Report

__all__ = ["report_json", "render", "figure_pngs", "write_files"]


def report_json(report: Report) -> bytes:
    """report.json's bytes (:meth:`Report.to_json`); orjson writes NaN as null, and the odds ratio's
    infinity is already the string "inf"."""
    return orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY) + b"\n"


def render(report: Report, fmt: str, figure_titles: bool = False) -> str:
    """One format as text, for stdout (Markdown without figure links; HTML with them embedded)."""
    from contam.harness.report.writers.html import render_html
    from contam.harness.report.texts.markdown import render_markdown

    if fmt == "json":
        return report_json(report).decode("utf-8")
    if fmt == "md":
        return render_markdown(report, figure_files=False)
    return render_html(report, figure_pngs(report, titles=figure_titles))


def write_files(report: Report, out: Path, figure_titles: bool = False) -> None:
    """report.json, report.md, report.html, every figure as PNG and PDF, every table as CSV and
    LaTeX under ``tables/``, all into ``out``."""
    from contam.harness.report.writers.html import render_html
    from contam.harness.report.texts.markdown import render_markdown, sections
    from contam.harness.report.writers.tables import write_tables

    pngs = figure_pngs(report, out, figure_titles)
    (out / "report.json").write_bytes(report_json(report))
    (out / "report.md").write_text(render_markdown(report), encoding="utf-8")
    (out / "report.html").write_text(render_html(report, pngs), encoding="utf-8")
    write_tables(report, sections(report), out / "tables")


def figure_pngs(report: Report, out: Path | None = None, titles: bool = False) -> dict[str, bytes]:
    """Each figure as PNG bytes (what the HTML embeds); with ``out``, also saved as PNG and PDF."""
    from contam.harness.report.plots import exposure as exposure_figure  # matplotlib
    from contam.harness.report.plots import paper as figures
    from contam.harness.report.plots import probes as probe_figures
    from contam.harness.report.plots import validation as validation_figure

    return {**figures.export(report, titles, out), **probe_figures.export(report, out),
            **exposure_figure.export(report, out), **validation_figure.export(report, out)}
