"""report.html's renderer (contam.harness.report.writers.html): the Jinja2 templates, the paragraphs' Markdown
with raw HTML escaped, numeric columns, figures at their print width, and the page look shared
with the view. The whole report's HTML is checked in tests/test_report.py and test_report_export.py."""

from __future__ import annotations

import io
import re
from pathlib import Path

from PIL import Image

from contam.harness.report.texts.format import Section, Table, user
from contam.harness.report.writers.html import TEMPLATES, Figure, ReportPage, environment, markdown

ROOT = Path(__file__).resolve().parent.parent


def _png(width: int, height: int = 20) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(out, format="PNG")
    return out.getvalue()


def test_paragraph_markdown_keeps_bold_and_code_and_escapes_raw_html():
    assert markdown("**Logistic model** on `x`") == "<strong>Logistic model</strong> on <code>x</code>"
    assert markdown("a <script>alert(1)</script> b") == "a &lt;script&gt;alert(1)&lt;/script&gt; b"
    hostile = "*not bold* [x](javascript:b) `tick` <b>"
    assert markdown(user(hostile)) == "*not bold* [x](javascript:b) `tick` &lt;b&gt;"


def test_a_figure_is_shown_at_its_print_width():
    figure = Figure.from_png("fig1", _png(600), "Figure 1.")
    assert figure.width == 288  # 600 px at 300 dpi = 2 in, at 144 CSS px per inch
    assert figure.src.startswith("data:image/png;base64,iVBOR")


def test_the_page_renders_sections_tables_and_figures_on_the_shared_layout():
    table = Table(["Model", "n", "Note"], [["m<1>", "12", "x"], ["m2", "—", "y"]], "A caption.", "t")
    sections = [Section("Top", ["**bold** & <i>"]), Section("Second", [], [table], ["fig1", "fig9"])]
    page = ReportPage("contam report", sections, {"fig1": Figure.from_png("fig1", _png(300), "Cap <1>")})
    html = environment().get_template("report.html").render(page=page)
    assert html.startswith("<!DOCTYPE html>") and html.count("<main") == 1 and 'class="skip"' in html
    assert "<h1>Top</h1>" in html and "<h2>Second</h2>" in html
    assert "<p><strong>bold</strong> &amp; &lt;i&gt;</p>" in html
    assert '<th>Model</th><th class="num">n</th><th>Note</th>' in html
    assert '<td>m&lt;1&gt;</td><td class="num">12</td>' in html
    assert '<div class="scroll" tabindex="0" role="region" aria-label="A caption.">' in html
    assert '<img alt="fig1" width="144" src="data:image/png;base64,' in html  # fig9: not drawn
    assert "<figcaption>Cap &lt;1&gt;</figcaption>" in html and 'alt="fig9"' not in html
    assert "<style>" in html and "--panel:" in html and ".report figure img" in html  # self-contained


def _palette(css: str) -> dict[str, str]:
    return dict(re.findall(r"(--[\w-]+):\s*([^;]+);", css.split("}", 1)[0]))


def test_the_view_and_the_report_share_one_layout_stylesheet(tmp_path):
    """layout.css is the one palette and page frame: inlined by report.html, linked first by every
    view page (served as /layout.css), and never declared again in the view's own stylesheet."""
    from tests.viewkit import build_view_store, view_client

    layout = (TEMPLATES / "layout.css").read_text("utf-8")
    view = _palette((ROOT / "harness/view/static/view.css").read_text("utf-8"))
    assert _palette(layout) and not set(_palette(layout)) & set(view)
    store = build_view_store(tmp_path / "s.duckdb", items=2)
    client = view_client(store)
    page = client.get("/").text
    assert page.index('href="/layout.css"') < page.index('href="/static/view.css"')
    assert client.get("/layout.css").text == layout
