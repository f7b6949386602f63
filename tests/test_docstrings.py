"""Module docstrings say in a few lines what a module is for (ARCHITECTURE.md, Module notes holds
how the long ones work), and what they cite is in the repository: ARCHITECTURE.md's sections,
never DESIGN.md, which a clone does not have."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [p for package in ("harness", "metrics", "providers") for p in sorted((ROOT / package).rglob("*.py"))]
MOST_LINES = 21  # a review once counted fifteen module docstrings of 22 lines or more


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text("utf-8")), clean=False) or ""


def test_no_module_docstring_runs_22_lines_or_more():
    long = {str(p.relative_to(ROOT)): n for p in SOURCES
            if (n := len(_docstring(p).strip("\n").splitlines())) > MOST_LINES}
    assert long == {}


def test_no_source_cites_design_md():
    assert [str(p.relative_to(ROOT)) for p in SOURCES if "DESIGN.md" in p.read_text("utf-8")] == []


# A citation, its section quoted or not: ARCHITECTURE.md, The store / ARCHITECTURE.md, "The store".
CITATION = re.compile(r"ARCHITECTURE\.md, [\"“]?([A-Z][\w':,\- ]*?)(?=[).;\"”]|$|\n)")


def citations(text: str) -> set[str]:
    return {m.group(1).rstrip(".") for m in CITATION.finditer(text)}


def test_a_citation_is_read_quoted_or_not():
    text = 'See ARCHITECTURE.md, "Scoring". And ARCHITECTURE.md, The store. ARCHITECTURE.md, “Batch jobs”'
    assert citations(text) == {"Scoring", "The store", "Batch jobs"}


def test_every_cited_architecture_section_exists():
    headings = set(re.findall(r"^#{2,3} (.+)$", (ROOT / "ARCHITECTURE.md").read_text("utf-8"), re.M))
    cited = {c for p in SOURCES for c in citations(p.read_text("utf-8"))}
    missing = sorted(c for c in cited if not any(h.startswith(c) or c.startswith(h) for h in headings))
    assert cited and missing == []


def test_tests_are_named_after_behaviour_not_a_trackers_issue_numbers():
    """The tracker is not in the repository: "issue 22 item 5" tells a reader nothing."""
    tests = sorted((ROOT / "tests").glob("*.py"))
    named = [f"{p.name}:{n}" for p in tests for n, line in enumerate(p.read_text("utf-8").splitlines(), 1)
             if re.search(r"\b[Ii]ssue \d+|def test_item\d+_", line) and p.name != Path(__file__).name]
    assert tests and named == []
