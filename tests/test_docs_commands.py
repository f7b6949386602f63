"""Every command block (```bash or ```sh) of README.md and of the pages in docs/ is run by a test:
this one follows an unmarked block line by line, in-process (tests.walkthroughkit); a block marked
`<!-- run by tests/test_x.py -->` is followed by that test file, which reads the block's page; a
block that cannot run here is marked `<!-- not run: why -->` (real provider keys, a GPU, a server
that runs until Ctrl-C)."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.walkthroughkit import README, ROOT, Walkthrough

PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
# a block may sit indented in a list item; its marker is the line right above it
BLOCK = re.compile(r"(?:^ *<!-- (run by|not run:) (.*?) -->\n)?^ *```(?:bash|sh)\n(.*?)^ *```", re.M | re.S)


@dataclass(frozen=True)
class Block:
    """One command block: its page, its marker (``run by``, ``not run:`` or None) and its lines."""

    page: Path
    marker: str | None
    note: str
    lines: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}: {self.lines[0][:60]}"


def command_blocks() -> list[Block]:
    return [Block(page, marker or None, note, tuple(textwrap.dedent(body).splitlines()))
            for page in PAGES
            for marker, note, body in BLOCK.findall(page.read_text(encoding="utf-8"))]


def joined(lines: tuple[str, ...]) -> list[str]:
    """The block's lines with each backslash continuation joined to its line, as a shell reads them."""
    return re.sub(r"\\\n\s*", " ", "\n".join(lines)).splitlines()


def test_every_page_with_commands_is_found():
    pages = {block.page.relative_to(ROOT).as_posix() for block in command_blocks()}
    assert {"README.md", "docs/tutorials/first-study.md", "docs/how-to/providers.md"} <= pages


@pytest.mark.parametrize("block", [b for b in command_blocks() if b.marker == "run by"], ids=str)
def test_a_block_run_elsewhere_names_a_test_file_that_reads_its_page(block):
    test_file = ROOT / block.note
    assert test_file.is_file() and test_file.parent.name == "tests", block.note
    page = "README" if block.page == README else block.page.relative_to(ROOT).as_posix()
    assert page in test_file.read_text(encoding="utf-8"), f"{block.note} never names {page}"


@pytest.mark.parametrize("block", [b for b in command_blocks() if b.marker == "not run:"], ids=str)
def test_a_block_not_run_says_why(block):
    assert len(block.note.split()) >= 4, block


@pytest.mark.parametrize("block", [b for b in command_blocks() if b.marker is None], ids=str)
def test_an_unmarked_block_runs_as_written(block, tmp_path, contam, monkeypatch):
    walk = Walkthrough(tmp_path, contam, monkeypatch)
    try:
        steps = walk.follow(joined(block.lines))
    finally:
        walk.close()
    assert steps, f"{block}: no contam command ran"
