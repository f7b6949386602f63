"""The paper's study is the default and stays byte for byte what it was before studies of one's own:
the judge rubric's hash, and the report on the paper's data (every table and the Markdown report,
the store's path and the generation time aside). The prompt hash is pinned in
tests/test_study_prompt.py."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from contam.metrics.judge import rubric_sha256

# Computed on main before study settings had any behaviour (commit b8bfcd3): the paper's rubric
# hash, which every stored paper label carries.
PAPER_RUBRIC_SHA256 = "47c6ecfbca35766068aa772a8d94806251468acd16ff0cb87c92fd24cafc1b8e"
# sha256 of the paper report's tables/* and report.md (normalised by report_digest) for
# tests.paper_data's store. b8bfcd3 wrote dea0c616...; the any-study work left it unchanged. It is
# the branch that fixed the report's statistics (κ over the cells both
# labelled, Holm within a model's probe family, ...) that moved it, to the value below, which that
# branch alone writes too. Table 5's means then became math.fsum means (DuckDB's parallel avg had
# moved their last digit between machines: 0.2909999999999999 on one, 0.291 on another). It moved
# once more (from a71f36ae...) when κ stopped counting blank and unanswered cells that both raters
# had labelled (imputed cells counted apart): the paper's data has one, gemma-4-31b's blank answer labelled
# wrong by both, so the Human × judge agreement section alone changed (pooled n 1599 -> 1598,
# 1 -> 2 imputed cells, gemma's row n 399 -> 398, exact 85.0% -> 84.9%, κ right/not 0.740 -> 0.739,
# the confusion's wrong/wrong 710 -> 709: agreement_by_model.csv/.tex, agreement_confusion.csv/.tex
# and the confusion caption in index.csv).
# Then report.md alone, once: an underscore inside a word is no longer escaped (`r_pb`,
# `paper_data.py`); every table file is byte for byte the same.
# Then the digest itself: report.md's "Computed with Python 3.11.7, ..., pandas 3.1.1, ..." line
# names the libraries installed, so a fresh machine that got pandas 3.1.2 moved the digest with
# every number the same; the versions are masked now (from e33d3c6f...), the report unchanged.
PAPER_REPORT_SHA256 = "309f09855bd9d9fd041f729368107abe9b8d5be31eb8cffdb34913281f2d144b"


def report_digest(out: Path, store: Path) -> str:
    """One sha256 over every table file's name and bytes and over report.md, with the store's
    path, the generation time and the installed libraries' versions (the only parts that differ
    between two builds) masked."""
    digest = hashlib.sha256()
    for path in sorted((out / "tables").iterdir()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    markdown = (out / "report.md").read_text(encoding="utf-8").replace(str(store), "<store>")
    markdown = re.sub(r"generated \S+Z", "generated <time>", markdown)
    digest.update(re.sub(r"Computed with .*?\. Bootstrap", "Computed with <versions>. Bootstrap", markdown).encode())
    return digest.hexdigest()


def test_the_paper_rubric_hash_is_pinned():
    assert rubric_sha256() == PAPER_RUBRIC_SHA256


def test_the_paper_report_is_unchanged(paper_out, paper_path):
    assert report_digest(paper_out, paper_path) == PAPER_REPORT_SHA256
