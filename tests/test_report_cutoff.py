"""The report's before/after-cut-off contrast (`[study] released` with `[[models]] cutoff`): the
counts from the store's own cells, the Wilson and Newcombe intervals and Fisher's p computed here
independently, cut-offs from --config or the newest run's record, and a date that does not parse
refused in one line before anything is written."""

from __future__ import annotations

import datetime
import json
import math

import pytest
from scipy import stats as sps

from contam.harness.report.analysis import build_report
from contam.harness.report.inputs.study_settings import StudyInputs
from contam.harness.store import Store
from contam.harness.study import StudySettings
from tests.studykit import CUTOFFS, MODELS, build_study_store, write_study_config

CONTRAST = "official,obscure-hack"
Z = sps.norm.ppf(0.975)


def wilson(k, n):
    """The textbook Wilson score interval, written out."""
    p = k / n
    centre, half = p + Z * Z / (2 * n), Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return (centre - half) / (1 + Z * Z / n), (centre + half) / (1 + Z * Z / n)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cutoff")
    truth = build_study_store(folder / "s.duckdb")
    cutoffs = {m: datetime.date.fromisoformat(d) for m, d in CUTOFFS.items()}
    with Store(folder / "s.duckdb", read_only=True) as store:
        report = build_report(store, contrast=("official", "obscure-hack"),
                              study=StudyInputs(StudySettings(released="released"), cutoffs))
    return truth, cutoffs, report


@pytest.mark.parametrize("model", MODELS)
def test_before_and_after_the_cutoff_match_an_independent_computation(study, model):
    truth, cutoffs, report = study
    row = next(r for r in report.cutoff["per_model"] if r["model"] == model)
    before = [truth.correct[(i, model)] for i in truth.item_ids if truth.released[i] <= cutoffs[model]]
    after = [truth.correct[(i, model)] for i in truth.item_ids if truth.released[i] > cutoffs[model]]
    k1, n1, k2, n2 = sum(before), len(before), sum(after), len(after)
    assert (row["before_right"], row["before_n"], row["after_right"], row["after_n"]) == (k1, n1, k2, n2)
    assert n1 and n2 and row["cutoff"] == CUTOFFS[model]
    (l1, u1), (l2, u2) = wilson(k1, n1), wilson(k2, n2)
    assert (row["before_ci_low"], row["before_ci_high"]) == pytest.approx((l1, u1))
    assert (row["after_ci_low"], row["after_ci_high"]) == pytest.approx((l2, u2))
    p1, p2 = k1 / n1, k2 / n2
    assert row["difference"] == pytest.approx(p1 - p2)
    newcombe = (p1 - p2 - math.hypot(p1 - l1, u2 - p2), p1 - p2 + math.hypot(u1 - p1, p2 - l2))
    assert (row["difference_ci_low"], row["difference_ci_high"]) == pytest.approx(newcombe)
    fisher = sps.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]])
    assert row["fisher_p"] == pytest.approx(fisher.pvalue) and row["odds_ratio"] == pytest.approx(fisher.statistic)


def test_holm_adjusts_across_the_models(study):
    _, _, report = study
    rows = report.cutoff["per_model"]
    raw = sorted(r["fisher_p"] for r in rows)
    assert min(r["fisher_p_holm"] for r in rows) == pytest.approx(min(1.0, 2 * raw[0]))


def test_a_model_without_a_cutoff_is_left_out_with_a_note(tmp_path):
    build_study_store(tmp_path / "s.duckdb")
    inputs = StudyInputs(StudySettings(released="released"), {"model-a": datetime.date(2024, 6, 30)})
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        report = build_report(store, contrast=("official", "obscure-hack"), study=inputs)
    assert [r["model"] for r in report.cutoff["per_model"]] == ["model-a"]
    assert any(n.section == "cutoff" and "model-b" in n.reason for n in report.notes)


def test_contam_report_reads_the_cutoffs_a_run_recorded(tmp_path, contam):
    build_study_store(tmp_path / "s.duckdb")
    record = {"study": StudySettings(released="released").to_record(),
              "models": [{"name": m, "cutoff": d} for m, d in CUTOFFS.items()]}
    with Store(tmp_path / "s.duckdb") as store:
        store.append("runs", [{"run_id": "r1", "kind": "run", "config": json.dumps(record)}])
    status, out, err = contam("report", "--store", tmp_path / "s.duckdb", "--out", tmp_path / "out",
                              "--contrast", CONTRAST)
    assert status == 0, err
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    assert {r["model"]: r["cutoff"] for r in report["cutoff"]["per_model"]} == CUTOFFS
    markdown = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "## Before and after the training cut-off" in markdown and "| model-a | 2024-06-30 |" in markdown
    assert (tmp_path / "out" / "tables" / "cutoff_by_model.csv").read_text(encoding="utf-8").startswith(
        "model,cutoff,before_n,before_right,before_accuracy")


@pytest.mark.parametrize("value", ["30/06/2024", "2024-13-01", "June 2024"])
def test_a_release_date_that_does_not_parse_is_one_line_and_nothing_is_written(tmp_path, contam, value):
    build_study_store(tmp_path / "s.duckdb", bad_released=value)
    config = write_study_config(tmp_path, exposure=None, subsets=())
    status, out, err = contam("report", "--store", tmp_path / "s.duckdb", "--out", tmp_path / "out",
                              "--config", config, "--contrast", CONTRAST)
    line = err.strip()
    assert status == 2 and out == "" and "\n" not in line
    assert "'i017'" in line and repr(value) in line and "not an ISO date" in line and "items.csv" in line
    assert not (tmp_path / "out").exists()
