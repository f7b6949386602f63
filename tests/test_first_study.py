"""The first study (README.md, "A first study", and docs/tutorials/first-study.md), followed line by
line as written: the packaged local model answers examples/first-study's six items offline, the
rule metrics score them, and the report and the sql step come out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.walkthroughkit import README, ROOT, Walkthrough, bash_block

TUTORIAL = ROOT / "docs" / "tutorials" / "first-study.md"
FIRST_STUDY = bash_block("## A first study", doc=README)


def test_the_readme_and_the_tutorial_give_the_same_first_study():
    assert bash_block("## A study of your own, scored by rules", doc=TUTORIAL) == FIRST_STUDY


@pytest.mark.slow
def test_the_first_study_as_written_scores_the_local_models_answers_by_rules(tmp_path, contam, monkeypatch):
    walk = Walkthrough(tmp_path, contam, monkeypatch)
    walk.follow(FIRST_STUDY)
    assert "smollm2-135m: 6/6 answered" in walk.step("run").out
    scored = walk.step("score").out
    for metric in ("contains", "exact", "bleu2"):
        assert f"{metric}: 6 scored (0 NULL)" in scored, scored
    report = json.loads(Path("runs/first-study-report/report.json").read_bytes())
    assert report["meta"]["cells"] == 6 and set(report["rule_metrics"]) == {"contains", "exact"}
    assert {row["metric"] for row in report["rule_accuracy"]} == {"contains", "exact"}
    assert walk.step("sql").out.count("│ official") == 3 and walk.step("sql").out.count("│ fan") == 3
