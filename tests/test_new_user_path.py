"""A new user's path: the step-by-step study (docs/tutorials/paper-study.md) reaches `contam`
(set-up puts nothing on PATH) and says what `contam score` needs offline; the demo's "try next" lines name a command the
user's shell can run."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

from contam.harness.cli import build_parser
from contam.harness.declare import from_args
from contam.harness.jobs import demo
from contam.harness.jobs.options.score import ScoreOptions

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
STUDY_PAGE = ROOT / "docs" / "tutorials" / "paper-study.md"  # "A study, step by step"
OFFLINE_SCORE = ("contam score --bertscore-model sentence-transformers/all-MiniLM-L6-v2 "
                 "--bertscore-layers 5")


def step_by_step() -> list[str]:
    section = STUDY_PAGE.read_text(encoding="utf-8").split("## A study, step by step", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1)
    return block.splitlines()


def test_the_step_by_step_study_activates_the_virtualenv_before_its_first_contam():
    lines = step_by_step()
    first_contam = next(n for n, line in enumerate(lines) if line.startswith("contam "))
    assert any(line.startswith(". .venv/bin/activate") for line in lines[:first_contam])


def test_the_step_by_step_study_gives_the_offline_score_line_beside_contam_score():
    lines = step_by_step()
    score = next(n for n, line in enumerate(lines) if line.startswith("contam score"))
    offline = next(n for n, line in enumerate(lines) if OFFLINE_SCORE in line)
    assert offline in (score + 1, score + 2) and "offline" in " ".join(lines[score:offline]).lower()
    args = build_parser().parse_args(shlex.split(OFFLINE_SCORE)[1:])  # the line is one the CLI takes
    options = from_args(ScoreOptions, args)
    assert (options.bertscore_model, options.layer) == ("sentence-transformers/all-MiniLM-L6-v2", 5)


def test_the_step_by_step_study_names_the_keyless_emulator_walkthrough_first():
    """The keyless path is named where the section begins, and its link
    reaches the heading whose section holds the walkthrough."""
    opening = STUDY_PAGE.read_text(encoding="utf-8").split("## A study, step by step", 1)[1].split("```", 1)[0]
    page, anchor = re.search(r"\[The emulator walkthrough\]\(([\w./-]+)#([a-z0-9-]+)\)", opening).groups()
    text = (STUDY_PAGE.parent / page).read_text(encoding="utf-8")
    headings = {re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-"): n
                for n, line in enumerate(text.splitlines()) if line.startswith("#")}
    below = "\n".join(text.splitlines()[headings[anchor]:]).split("\n### ", 1)[0]
    assert "Try it without keys against the emulator" in below and "contam emulator --items" in below


def test_the_readme_says_how_to_reach_contam_after_set_up():
    text = README.read_text(encoding="utf-8").split("## A study, step by step", 1)[0]
    assert "`.venv/bin/contam`" in text and "`. .venv/bin/activate`" in text


@pytest.fixture
def venv(tmp_path, monkeypatch):
    """A virtualenv's bin folder with its python and contam, the working folder above it, and a
    PATH without it (set-up activates nothing)."""
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "contam", "activate"):
        (bin_dir / name).write_text("#!/bin/sh\n", encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    return bin_dir


def test_try_next_names_the_virtualenvs_contam_when_path_lacks_it(venv, tmp_path, capsys):
    demo._print_where(tmp_path / "out", [], 1.0)
    lines = capsys.readouterr().out.splitlines()
    tries = [line.strip() for line in lines if " sql --store " in line]
    assert len(tries) == 3 and all(line.startswith(".venv/bin/contam sql --store") for line in tries)
    assert "  (or `. .venv/bin/activate` once in this shell, and then plain `contam`)" in lines


def test_try_next_opens_contam_view_on_the_demos_own_store(venv, tmp_path, capsys):
    """The default store is runs/contam.duckdb, the demo's is OUT/contam.duckdb."""
    demo._print_where(tmp_path / "out", [], 1.0)
    views = [shlex.split(line.split("#")[0]) for line in capsys.readouterr().out.splitlines()
             if " view " in line]
    assert views == [[".venv/bin/contam", "view", "--store", str(tmp_path / "out" / demo.STORE_NAME)]]
    assert demo.STORE_NAME == "contam.duckdb"
    args = build_parser().parse_args(views[0][1:])
    assert (args.command, args.store) == ("view", str(tmp_path / "out" / "contam.duckdb"))


def test_try_next_says_plain_contam_in_an_activated_virtualenv(venv, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", f"{venv}:/usr/bin:/bin")
    assert demo.contam_command() == "contam"
    demo._print_where(tmp_path / "out", [], 1.0)
    out = capsys.readouterr().out
    assert out.count("\n  contam sql --store") == 3 and "activate" not in out


def test_try_next_names_contam_init_for_a_study_of_ones_own(tmp_path, capsys):
    """After the demo, the way to one's own study: `contam init`, a command the CLI takes."""
    demo._print_where(tmp_path / "out", [], 1.0)
    [line] = [line.strip() for line in capsys.readouterr().out.splitlines() if " init " in line]
    words = shlex.split(line, comments=True)
    assert words[0].endswith("contam") and build_parser().parse_args(words[1:]).command == "init"
