"""`contam report`: a store -> report.json, report.md, report.html and the three figures.

Where it writes: ``--out DIR`` if given; with ``--format`` alone it prints that one format to stdout
and writes nothing; with neither, it writes to a folder named after the store, beside it
(``runs/contam.duckdb`` -> ``runs/contam_report/``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from harness.report.analysis import build_report, parse_contrast
from harness.store import Store

__all__ = ["report_command", "write_report", "report_json", "default_out_dir", "render"]

FILES = ("report.json", "report.md", "report.html")


def report_command(args: argparse.Namespace) -> int:
    contrast = parse_contrast(args.contrast)
    with Store(args.store, read_only=True) as store:
        report = build_report(store, contrast=contrast, human=args.human, judge=args.judge)
    if args.out or not args.format:
        out = Path(args.out) if args.out else default_out_dir(args.store)
        written = write_report(report, out)
        print(f"wrote {len(written)} files to {out}/", file=sys.stderr if args.format else sys.stdout)
    if args.format:
        sys.stdout.write(render(report, args.format))
    return 0


def default_out_dir(store_path: str | Path) -> Path:
    path = Path(store_path)
    return path.with_name(f"{path.stem}_report")


def report_json(report: dict[str, Any]) -> bytes:
    """orjson writes NaN as null; the odds ratio's infinity is already the string "inf"."""
    return orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY) + b"\n"


def render(report: dict[str, Any], fmt: str) -> str:
    """One format as text, for stdout (Markdown without figure links; HTML with them embedded)."""
    from harness.report import render as report_render

    if fmt == "json":
        return report_json(report).decode("utf-8")
    if fmt == "md":
        return report_render.render_markdown(report, figure_files=False)
    return report_render.render_html(report, _figure_pngs(report))


def write_report(report: dict[str, Any], out: Path) -> list[Path]:
    """All three formats and every figure as PNG and PDF; returns the paths written."""
    from harness.report import render as report_render

    out.mkdir(parents=True, exist_ok=True)
    pngs = _figure_pngs(report, out)
    (out / "report.json").write_bytes(report_json(report))
    (out / "report.md").write_text(report_render.render_markdown(report), encoding="utf-8")
    (out / "report.html").write_text(report_render.render_html(report, pngs), encoding="utf-8")
    figure_files = [out / f"{name}.{ext}" for name in pngs for ext in ("png", "pdf")]
    return [*(out / f for f in FILES), *figure_files]


def _figure_pngs(report: dict[str, Any], out: Path | None = None) -> dict[str, bytes]:
    """Each figure as PNG bytes (what the HTML embeds); with ``out``, also saved as PNG and PDF."""
    from harness.report import figures

    pngs = {}
    for name, fig in figures.draw_figures(report).items():
        pngs[name] = figures.png_bytes(fig)
        if out is not None:
            (out / f"{name}.png").write_bytes(pngs[name])
            figures.save_pdf(fig, out / f"{name}.pdf")
        figures.close(fig)
    return pngs
