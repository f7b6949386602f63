"""A study's own judge rubric: ``[judge] rubric = "rubric.txt"`` replaces the
paper's text on the wire, its sha256 goes in ``labels.rubric_sha256``, the judge run and the
report's provenance; the labels stay right / partially right / wrong; a rubric that does not name
all three, or a missing file, is one line, exit 2, and nothing is written."""

from __future__ import annotations

import re

import pytest

from contam.harness.prompts import prompt_sha256
from contam.harness.report.parts.provenance import provenance
from contam.harness.store import Store
from contam.harness.text import sha256_text
from contam.metrics.judge import JUDGE_RUBRIC, missing_labels, rubric_sha256
from tests.ownitemskit import EXAMPLE, SYSTEM, TEMPLATE, example_config, import_example_items

RUBRIC = (EXAMPLE / "rubric.txt").read_text(encoding="utf-8")
GRADED = re.compile(r"\AReference answer: (.*)\nAnswer to grade: (.*)\Z", re.DOTALL)


def respond(text: str) -> str:
    """Answers "collections" to every question; as the judge, exact match right, else wrong."""
    graded = GRADED.match(text)
    if graded is None:
        return "collections"
    return "Right" if graded[1] == graded[2] else "wrong"


@pytest.mark.parametrize(("text", "missing"), [
    (JUDGE_RUBRIC, []),
    (RUBRIC, []),
    ("Labels: RIGHT, Partially  Right, WRONG.", []),
    ("Reply right or partially right.", ["wrong"]),
    ("Reply partially right or wrong.", ["right"]),  # "right" inside "partially right" is not it
    ("Reply correct or incorrect.", ["right", "partially right", "wrong"]),
    ("Say alright, or wrongly.", ["right", "partially right", "wrong"]),
])
def test_a_rubric_must_name_all_three_labels(text, missing):
    assert missing_labels(text) == missing


@pytest.fixture
def answered(tmp_path, emulator, monkeypatch, contam):
    monkeypatch.setenv("CONTAM_EMULATOR_KEY", "anything")
    emu = emulator(responder=respond)
    import_example_items(tmp_path / "s.duckdb")
    config = example_config(tmp_path, emu)
    status, _, err = contam("run", config, "--models", "gpt-emu", "--no-progress")
    assert status == 0, err
    return emu, config


def test_the_judge_grades_with_the_studys_rubric(tmp_path, answered, contam):
    emu, config = answered
    status, out, err = contam("judge", config, "--no-progress")
    assert status == 0, err
    systems = {r.body.get("system") for r in emu.requests if r.path == "/v1/messages"}
    assert systems == {RUBRIC}  # the study's rubric, byte for byte, on the wire
    digest = sha256_text(RUBRIC)
    assert digest == rubric_sha256(RUBRIC) != rubric_sha256()
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        labels = store.query("SELECT item_id, label, rubric_sha256 FROM latest_labels ORDER BY 1")
        judge_runs = store.query("SELECT DISTINCT prompt_sha256 FROM runs WHERE kind = 'judge'")
        raters = provenance(store)["raters"]
    assert {label for _, label, _ in labels} == {"right", "wrong"}
    assert dict((item, label) for item, label, _ in labels)["py-01"] == "right"
    assert {sha for _, _, sha in labels} == {digest} and judge_runs == [(digest,)]
    assert [(r["rater"], r["rubric_sha256"]) for r in raters] == [("judge:judge-emu", [digest])]


def test_the_report_prints_the_rubric_and_prompt_hashes(tmp_path, answered, contam):
    _, config = answered
    assert contam("judge", config, "--no-progress")[0] == 0
    out_dir = tmp_path / "report"
    status, _, err = contam("report", "--store", tmp_path / "s.duckdb", "--out", out_dir,
                            "--contrast", "official,obscure")
    assert status == 0, err
    markdown = (out_dir / "report.md").read_text(encoding="utf-8")
    assert sha256_text(RUBRIC) in markdown
    assert prompt_sha256(SYSTEM, TEMPLATE) in markdown  # the run's system prompt and template


@pytest.mark.parametrize(("rubric", "problem"), [
    (None, "[judge] rubric: no such file"),
    ("Reply right or partially right.\n", "the rubric does not name the label(s) wrong (the judge "
                                          "answers right, partially right or wrong)"),
])
def test_a_bad_rubric_is_one_line_and_writes_nothing(tmp_path, answered, contam, rubric, problem):
    _, config = answered
    path = tmp_path / "rubric.txt"
    if rubric is None:
        path.unlink()
    else:
        path.write_text(rubric, encoding="utf-8")
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        before = (store.count("runs"), store.count("labels"), store.count("attempts"))
    status, out, err = contam("judge", config, "--no-progress")
    assert status == 2 and err.count("\n") == 1 and problem in err and "Traceback" not in err
    assert str(path) in err
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        assert (store.count("runs"), store.count("labels"), store.count("attempts")) == before
