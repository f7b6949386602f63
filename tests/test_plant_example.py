"""examples/planted and the docs' "Planted contamination" walkthrough (docs/how-to/planting.md): the items are many and
distinct (not one template with names swapped), and the walkthrough's commands, run as written on
a tiny model in place of SmolLM2 (to keep the suite fast), plant two doses, score them with min-k
and give a report whose Probe validation section has the planted models and the base."""

from __future__ import annotations

import csv
import json
import re
import shlex
from pathlib import Path

import pytest

from contam.harness.cli import main
from tests.plantkit import item_words, tiny_folder

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "planted"


def items() -> list[dict[str, str]]:
    with (EXAMPLE / "items.csv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def skeleton(question: str) -> str:
    """A question with its names and numbers blanked: two items of one template share it."""
    return re.sub(r"\b([A-Z][\w']*|\d+)\b", "_", question.split(" ", 1)[1])


def test_the_items_are_many_and_distinct() -> None:
    rows = items()
    assert len(rows) >= 40
    for column in ("item_id", "title", "question", "reference"):
        assert len({row[column] for row in rows}) == len(rows), column
    assert len({skeleton(row["question"]) for row in rows}) == len(rows)
    assert {row["subset"] for row in rows} == {"coast", "upland"}


def walkthrough() -> list[str]:
    """The `contam` lines of the docs section's shell block."""
    readme = (ROOT / "docs" / "how-to" / "planting.md").read_text(encoding="utf-8")
    part = readme.split("### Planted contamination", 1)[1].split("\n## ", 1)[0]
    block = part.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith("contam ")]


@pytest.fixture
def example(tmp_path, monkeypatch) -> dict[str, Path]:
    """The example's config with a tiny model as ``base``, its store and output in tmp."""
    monkeypatch.setenv("CONTAM_CACHE_DIR", str(tmp_path / "cache"))
    model = tiny_folder(tmp_path / "tiny", item_words(EXAMPLE / "items.csv"))
    text = (EXAMPLE / "planted.toml").read_text(encoding="utf-8")
    assert 'model = "SmolLM2-135M-Instruct.Q4_1.gguf"' in text
    text = text.replace('model = "SmolLM2-135M-Instruct.Q4_1.gguf"', f'model = "{model}"')
    text = text.replace('store = "../../runs/planted.duckdb"', f'store = "{tmp_path / "p.duckdb"}"')
    text = text.replace('items = "items.csv"', f'items = "{EXAMPLE / "items.csv"}"')
    config = tmp_path / "planted.toml"
    config.write_text(text, encoding="utf-8")
    return {"examples/planted/planted.toml": config, "runs/planted.duckdb": tmp_path / "p.duckdb",
            "runs/planted-report": tmp_path / "report"}


def test_the_readme_walkthrough_runs_and_reports_the_validation(example) -> None:
    lines = walkthrough()
    assert [line.split()[1] for line in lines] == ["plant", "probe", "report"]
    for line in lines:
        argv = [str(example.get(word, word)) for word in shlex.split(line)[1:]]
        assert main([*argv, "--no-progress"] if argv[0] != "report" else argv) == 0, line
    report = json.loads((example["runs/planted-report"] / "report.json").read_text())
    rows = report["validation"]["rows"]
    assert {(r["model"], r["role"]) for r in rows} == {
        ("planted-e1", "planted"), ("planted-e3", "planted"), ("base", "base")}
    assert {r["measure"] for r in rows} == {"Min-K%", "Min-K%++"}
    assert all(r["planted_n"] == 24 and r["unplanted_n"] == 24 for r in rows)
    assert [p["epochs"] for p in report["validation"]["plantings"]] == [1, 3]
    assert (example["runs/planted-report"] / "fig_validation_dose.png").is_file()
