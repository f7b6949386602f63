"""report.html: the report's sections rendered by the Jinja2 templates in ``templates/`` (autoescaped;
the view's pages share their layout). ARCHITECTURE.md, The report."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from markdown_it import MarkdownIt
from markupsafe import Markup

from contam.harness.report.model import Report
from contam.harness.report.texts.format import DASH, PNG_DPI, Section

__all__ = ["TEMPLATES", "Figure", "ReportPage", "markdown", "environment", "report_page", "render_html"]

TEMPLATES = Path(__file__).parent.parent / "templates"
_SCREEN_SCALE = 144  # CSS px per printed inch: 1.5 × 96, so a figure's 8-point text reads as 12 px
_MARKDOWN = MarkdownIt("commonmark", {"html": False})  # raw HTML in a paragraph shows as text


def markdown(text: str) -> Markup:
    """One paragraph of the report's Markdown (``**bold**``, `` `code` ``, :func:`format.user`'s
    escapes) as HTML; raw HTML is escaped, never passed through."""
    return Markup(_MARKDOWN.renderInline(text))


@dataclass(frozen=True)
class Figure:
    """A figure as the page shows it: embedded as a data URL, at its print width on screen."""

    name: str
    caption: str
    width: int  # CSS px
    src: str

    @classmethod
    def from_png(cls, name: str, png: bytes, caption: str) -> "Figure":
        from PIL import Image  # matplotlib's own dependency

        with Image.open(io.BytesIO(png)) as image:  # reads the header only
            width = round(image.width / PNG_DPI * _SCREEN_SCALE)
        return cls(name, caption, width, "data:image/png;base64," + base64.b64encode(png).decode("ascii"))


@dataclass(frozen=True)
class ReportPage:
    """What the templates render: the sections (as report.md has them) and their figures."""

    title: str
    sections: list[Section]
    figures: dict[str, Figure] = field(default_factory=dict)

    def figures_of(self, section: Section) -> list[Figure]:
        return [self.figures[name] for name in section.figures if name in self.figures]


def _dash_for_none(value: Any) -> Any:
    return DASH if value is None else value


def environment(*more: Path) -> jinja2.Environment:
    """An autoescaping environment over ``more`` folders (searched first), then ``TEMPLATES``,
    with the ``markdown`` filter the sections use. A missing value (an item without a title, say)
    prints as the report's dash, never as "None"."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader([*more, TEMPLATES]), autoescape=True,
                             undefined=jinja2.StrictUndefined, finalize=_dash_for_none)
    env.filters["markdown"] = markdown
    return env


def report_page(report: Report, figures_png: dict[str, bytes]) -> ReportPage:
    """The report's sections (:func:`contam.harness.report.texts.markdown.sections`) and its figures."""
    from contam.harness.report.texts.markdown import figure_caption, sections  # pandas: only once a report is built

    figures = {name: Figure.from_png(name, png, figure_caption(name, report))
               for name, png in figures_png.items()}
    return ReportPage("contam report", sections(report), figures)


def render_html(report: Report, figures_png: dict[str, bytes]) -> str:
    """One self-contained page: styles inline, the figures embedded as base64 PNG."""
    return _ENV.get_template("report.html").render(page=report_page(report, figures_png))


_ENV = environment()
