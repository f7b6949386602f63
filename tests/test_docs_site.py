"""The documentation site (mkdocs.yml, docs/): `mkdocs build --strict` succeeds into a temporary
folder, every page is in the nav, and the built pages fetch nothing from elsewhere (no script,
style or font by an http(s) URL), so the site works offline."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scripts.docs_site import ARRIVING, build_site

ROOT = Path(__file__).resolve().parent.parent
EXTERNAL = re.compile(r"""(?:<script[^>]+src|<link[^>]+href|@import|url\()\s*=?\s*["']?(?:https?:)?//""", re.I)


def nav_pages() -> set[str]:
    return set(re.findall(r":\s*([\w./-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text("utf-8"), re.M))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("docs-site")
    built = build_site(work)  # strict; the reference pages other branches generate are stubbed
    assert built.returncode == 0, built.stderr[-3000:]
    return work / "site"


def test_the_site_builds_strictly_with_a_page_for_every_nav_entry(site):
    for page in nav_pages():
        assert (site / page.replace(".md", ".html")).is_file(), page


def test_every_page_in_docs_is_in_the_nav():
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert pages <= nav_pages(), sorted(pages - nav_pages())


def test_the_built_pages_fetch_no_script_style_or_font_from_elsewhere(site):
    built = [*site.rglob("*.html"), *site.rglob("*.css"), *site.rglob("*.js")]
    assert any(p.suffix == ".html" for p in built)
    for path in built:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert not EXTERNAL.search(text), (path.relative_to(site), EXTERNAL.search(text).group(0))
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, path


def test_the_readme_is_a_front_page_whose_links_reach_files():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert sum(link.startswith("docs/") for link in links) >= 10
    for link in links:
        assert (ROOT / link).is_file() or link.removeprefix("docs/") in ARRIVING, link
