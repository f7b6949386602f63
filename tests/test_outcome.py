"""The study's outcome (`[study] correct`, `contam report --correct`): what it accepts and refuses,
its default, and a report of a store scored by rules alone (no labels) whose accuracy, Exposure
and tier sections count right answers by the rule, checked against statsmodels' Logit fitted here
on the same outcome."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import statsmodels.api as sm

from contam.harness.config import load_config
from contam.harness.errors import UserError
from contam.harness.jobs.score import score_store
from contam.harness.report.analysis import build_report
from contam.harness.report.texts.markdown import figure_caption
from contam.harness.report.inputs.study_settings import StudyInputs
from contam.harness.store import Store
from contam.harness.study import StudySettings, settings_from_record
from contam.metrics.outcome import Outcome, default_outcome, parse_outcome
from tests.studykit import MODELS, TIERS, build_study_store

RULES = StudySettings(exposure="exposure", subsets=TIERS, metrics=("contains", "exact"))


@pytest.mark.parametrize("text, outcome", [
    ("labels", Outcome()), ("contains", Outcome("contains")), (" exact ", Outcome("exact")),
    ("bleu2 >= 0.5", Outcome("bleu2", ">=", 0.5)), ("bertscore_f1>0.9", Outcome("bertscore_f1", ">", 0.9)),
    ("bleu2 < .25", Outcome("bleu2", "<", 0.25))])
def test_an_outcome_is_labels_a_rule_or_a_graded_metric_with_one_comparison(text, outcome):
    assert parse_outcome(text) == outcome


@pytest.mark.parametrize("text, why", [
    ("containz", "is no metric nor labels"), ("bleu2", "is graded: give it one threshold"),
    ("exact >= 0.5", "is a rule, right or not"), ("bleu2 == 0.5", "is graded"),
    ("bleu2 >= 0.5 and exact", "is graded"), ("bleu2_nltk >= 0.5", "is no metric")])
def test_an_unknown_outcome_is_refused_in_one_line_naming_the_accepted_ones(text, why):
    with pytest.raises(UserError) as caught:
        parse_outcome(text, "--correct")
    message = str(caught.value)
    assert message.startswith(f"--correct: {text!r} {why}") and "\n" not in message
    assert '"labels", "exact", "contains", "numeric", "regex"' in message and '"bleu2 >= 0.5"' in message


def test_without_a_setting_labels_win_else_the_first_rule_metric_else_none():
    assert default_outcome(True, ("contains",)) == Outcome()
    assert default_outcome(False, ("bleu2", "numeric", "contains")) == Outcome("numeric")
    assert default_outcome(False, ("bleu2", "bertscore_f1")) is None


def test_the_config_checks_study_correct_and_the_run_record_keeps_it(tmp_path):
    config = tmp_path / "study.toml"
    config.write_text('[study]\ncorrect = "bleu2 >= 0.5"\n', encoding="utf-8")
    settings = load_config(config).study
    assert settings_from_record(json.loads(json.dumps(settings.to_record()))).correct == "bleu2 >= 0.5"
    config.write_text('[study]\ncorrect = "bleu2"\n', encoding="utf-8")
    with pytest.raises(UserError, match=re.escape(f"{config}: [study] correct: 'bleu2' is graded")):
        load_config(config)


# -- a store scored by rules alone ---------------------------------------------------------------

@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """The study store without labels, scored by contains and exact (a right answer repeats the
    reference, so both say 1.0 exactly where the store's truth says right)."""
    path = tmp_path_factory.mktemp("rules") / "rules.duckdb"
    truth = build_study_store(path, labels=False)
    with Store(path) as store:
        score_store(store, ["contains", "exact", "bleu2"])
    return path, truth


def report_of(path, settings=RULES, **options):
    with Store(path, read_only=True) as store:
        return build_report(store, study=StudyInputs(settings), **options)


@pytest.fixture(scope="module")
def by_rule(scored):
    return report_of(scored[0])


def test_a_rule_scored_store_reports_accuracy_under_the_first_rule_metric(scored, by_rule):
    _, truth = scored
    assert by_rule.outcome == "contains" and by_rule.human_rater is None
    rights = {r["model"]: (r["right"], r["n"]) for r in by_rule.overall}
    assert rights == {m: (sum(truth.correct[(i, m)] for i in truth.item_ids), 90) for m in MODELS}
    assert by_rule.gap and by_rule.cmh and by_rule.logistic  # the contrast, by the rule


@pytest.mark.parametrize("model", MODELS)
def test_the_exposure_fit_under_a_rule_is_statsmodels_logit_on_that_rule(scored, by_rule, model):
    path, truth = scored
    with Store(path, read_only=True) as store:
        calls = dict(store.query("SELECT item_id, contains FROM cells WHERE model = ?", [model]))
    x = np.array([truth.exposure[i] for i in truth.item_ids])
    y = np.array([calls[i] for i in truth.item_ids])  # the rule's own values, read from the store
    expected = sm.Logit(y, sm.add_constant(x)).fit(disp=0)
    row = next(r for r in by_rule.exposure["per_model"] if r["model"] == model)
    low, high = np.exp(expected.conf_int()[1])
    assert row["odds_ratio"] == pytest.approx(np.exp(expected.params[1]), rel=1e-6)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), rel=1e-6)
    assert row["wald_p"] == pytest.approx(expected.pvalues[1], rel=1e-6)
    assert by_rule.exposure["pooled"]["odds_ratio"] > 1  # the pooled row is there too
    assert by_rule.exposure["correct"] == {"outcome": "contains", "scored": 180, "unanswered": 0,
                                              "unlabelled": 0}


def test_the_tiers_under_a_rule_count_its_right_answers(scored, by_rule):
    _, truth = scored
    rows = {(r["model"], r["subset"]): r["right"] for r in by_rule.tiers["per_tier"]}
    assert rows == {(m, t): sum(truth.correct[(i, m)] for i in truth.item_ids if truth.tier[i] == t)
                    for m in MODELS for t in TIERS}
    assert len(by_rule.tiers["trend"]) == len(MODELS)


def test_correct_overrides_the_study_and_a_threshold_is_right_or_not(scored):
    path, _ = scored
    with Store(path, read_only=True) as store:
        expected = dict(store.query("SELECT model, count(*) FILTER (WHERE bleu2 >= 0.5) FROM cells "
                                    "GROUP BY model"))
    report = report_of(path, correct="bleu2 >= 0.5")
    assert report.outcome == "bleu2 >= 0.5"
    assert {r["model"]: r["right"] for r in report.overall} == expected
    assert all(r["partial"] == 0 for r in report.overall)  # no partial credit under a metric
    with pytest.raises(UserError, match=r"^--correct: 'containz' is no metric"):
        report_of(path, correct="containz")


def test_labels_stay_the_default_where_the_store_has_them(tmp_path):
    path = tmp_path / "labelled.duckdb"
    truth = build_study_store(path)
    with Store(path) as store:
        score_store(store, ["contains"])
    labelled = report_of(path, settings=StudySettings(metrics=("contains",), subsets=TIERS))
    assert "outcome" not in labelled.to_json()  # the paper's report, unchanged
    assert labelled.human_rater == "human"
    by_rule = report_of(path, settings=StudySettings(metrics=("contains",), subsets=TIERS,
                                                     correct="contains"))
    assert [r["right"] for r in by_rule.overall] == [
        sum(truth.correct[(i, m)] for i in truth.item_ids) for m in [r["model"] for r in by_rule.overall]]
    assert by_rule.agreement == labelled.agreement  # agreement stays label-based


def test_the_report_names_its_outcome_first_and_in_every_caption(scored, tmp_path, contam):
    path, _ = scored
    out = tmp_path / "out"
    status, _, err = contam("report", "--store", path, "--out", out, "--correct", "exact",
                            "--contrast", "official,obscure-hack")
    assert status == 0, err
    markdown = (out / "report.md").read_text("utf-8")
    first = next(line for line in markdown.splitlines()[1:] if line.strip())
    assert first.startswith("**correct = exact**")
    report = report_of(path, correct="exact", contrast=("official", "obscure-hack"))  # as the command built it
    figures = sorted(p.stem for p in out.glob("fig*.png"))
    assert "fig1_leaderboard" in figures
    for name in figures:
        assert figure_caption(name, report).endswith("Correct = exact."), name
        assert "human" not in figure_caption(name, report).lower(), name


def test_contam_report_refuses_an_unknown_correct_in_one_line(scored, tmp_path, contam):
    path, _ = scored
    status, _, err = contam("report", "--store", path, "--out", tmp_path / "out", "--correct", "exactly")
    assert status != 0 and err.strip().count("\n") == 0
    assert "--correct: 'exactly' is no metric nor labels (accepted: \"labels\"" in err
    assert not (tmp_path / "out").exists()  # nothing half-written


def _run(tmp_path, emulator, study: str):
    from tests.runkit import model_entry, run_inprocess, write_config

    config_path = write_config(tmp_path, [model_entry("openai", emulator())], items=3)
    config_path.write_text(config_path.read_text() + study, encoding="utf-8")
    return run_inprocess(config_path, tmp_path / "s.duckdb")


def test_a_run_by_exact_match_under_a_prompt_asking_for_sentences_warns_first(tmp_path, emulator, keys):
    from contam.harness.store.settings import recorded_study

    result = _run(tmp_path, emulator, '[study]\ncorrect = "exact"\n')
    assert result.status == 0, result.err
    first = result.err.splitlines()[0]
    assert first.startswith("warning: correct = exact needs the answer alone, but the prompt asks "
                            "for sentences ('Answer from memory only.")
    assert result.err.count("correct = exact") == 1
    with Store(tmp_path / "s.duckdb") as store:
        assert recorded_study(store).correct == "exact"  # recorded with the study's settings


def test_a_prompt_for_the_answer_alone_or_another_outcome_does_not_warn(tmp_path, emulator, keys):
    alone = _run(tmp_path, emulator, '[prompt]\nsystem = "Reply with the answer alone."\n'
                                     '[scoring]\nmetrics = ["exact"]\n')  # exact by default
    assert alone.status == 0 and "warning" not in alone.err
    (tmp_path / "second").mkdir()
    contains = _run(tmp_path / "second", emulator, '[scoring]\nmetrics = ["contains"]\n')
    assert contains.status == 0 and "warning" not in contains.err


def test_by_a_column_under_a_threshold_counts_the_outcome(scored):
    path, _ = scored
    with Store(path, read_only=True) as store:
        expected = {(m, s): n for m, s, n in store.query(
            "SELECT model, subset, count(*) FILTER (WHERE bleu2 >= 0.5) FROM cells GROUP BY ALL")}
    by = report_of(path, correct="bleu2 >= 0.5", by="subset").by
    assert by["regimes"][0] == "outcome"
    rows = {(r["model"], r["value"]): r["right"] for r in by["rows"] if r["regime"] == "outcome"}
    assert rows == expected


def test_no_table_heading_calls_a_metric_outcome_human(scored, tmp_path, contam):
    path, _ = scored
    out = tmp_path / "out"
    assert contam("report", "--store", path, "--out", out, "--correct", "contains",
                  "--contrast", "official,obscure-hack")[0] == 0
    markdown = (out / "report.md").read_text("utf-8")
    headings = [line for line in markdown.splitlines() if line.startswith("| Model")]
    assert headings and not any("Human" in line or "human" in line for line in headings)
    assert "| Model | correct = contains |" in markdown
    assert "(2 tests, correct = contains)" in markdown  # the gap's Holm family
