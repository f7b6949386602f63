"""The typed report: frozen, each section's notes its own, and report.json written by one serialiser."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from contam.harness.report.analysis import build_report
from contam.harness.report.model import JSON_KEYS, NOTES_ORDER, OMITTED, Note, Report, Section, noted
from contam.harness.report.writers.output import report_json
from tests import docs_reference as ref
from tests.test_analysis import small_store


def test_a_section_s_notes_are_its_own_and_the_report_gathers_them_in_order(store_path):
    with small_store(store_path) as store:  # human labels and BLEU-2 only: no judge, no BERTScore
        report = build_report(store, contrast=("canon", "hack"))
    owners = {note.section: key for key, notes in report.section_notes.items() for note in notes}
    assert owners["rank_correlation.judge"] == "rank_correlation"  # the judge's ρ: no judge labels
    assert {n.section for n in report.section_notes["metric_validity"]} == {"metric_validity.bertscore_f1"}
    assert report.section_notes["probes"][0].section == "probes"  # no probe scores: its own note
    assert "judge_rater" not in report.section_notes  # no judge: its section has nothing to say
    assert report.notes == tuple(n for key in NOTES_ORDER for n in report.section_notes.get(key, ()))


def test_a_report_is_frozen(paper):
    with pytest.raises(dataclasses.FrozenInstanceError):
        paper.overall = []
    with pytest.raises(TypeError):
        paper.section_notes["gap"] = ()


def test_report_json_round_trips_the_documented_keys_with_the_report_s_values(paper):
    written = orjson.loads(report_json(paper))
    optional = {"outcome", "study", "exposure", "cutoff", "tiers", "rule_metrics", "rule_accuracy", "by",
                "without_subsets", "without_contrast"}  # the paper's report has none of them
    assert list(written) == [key for key in JSON_KEYS if key not in optional]
    assert set(JSON_KEYS) == set(ref.REPORT_KEYS)
    assert written["notes"] == [{"section": n.section, "reason": n.reason} for n in paper.notes]
    assert written["overall"] == paper.overall and written["gap"] == paper.gap
    assert written["human_rater"] == paper.human_rater and written["not_in_report"] == []


def test_an_optional_key_is_written_only_with_a_value_and_outcome_may_be_null():
    assert "outcome" not in Report().to_json() and "exposure" not in Report().to_json()
    assert Report(outcome=None).to_json()["outcome"] is None
    assert Report(outcome="contains", rule_metrics=["contains"]).to_json()["rule_metrics"] == ["contains"]
    assert Report().outcome is OMITTED and not OMITTED


def test_a_section_built_with_noted_keeps_only_the_notes_its_builder_made():
    def build(notes: list) -> int:
        notes.append({"section": "cmh", "reason": "one model only"})
        return 3
    assert noted(build) == Section(3, (Note("cmh", "one model only"),))
    report = Report.of(cmh=noted(build), gap=Section(None))
    assert report.cmh == 3 and report.gap is None and report.notes == (Note("cmh", "one model only"),)


def test_notes_of_a_section_outside_the_notes_order_are_refused():
    with pytest.raises(ValueError, match="overall"):
        Report.of(overall=Section([], (Note("overall", "x"),)))
