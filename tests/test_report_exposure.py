"""The report's Exposure section (`[study] exposure`): per-model odds ratios against statsmodels'
Logit fitted here on the store's own cells, the pooled fit against statsmodels' cluster-robust
covariance (and the sandwich formula written out), the correct-label rule, the quintile table,
the figure and tables, and a non-numeric exposure refused before anything is written."""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats as sps

from contam.harness.report.analysis import build_report
from contam.harness.report.parts.exposure import unfit_reason
from contam.harness.report.inputs.study_settings import StudyInputs
from contam.harness.store import Store
from contam.harness.study import StudySettings
from tests.studykit import JUDGE, MODELS, TIERS, build_study_store, write_study_config

CONTRAST = "official,obscure-hack"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("study")
    truth = build_study_store(folder / "study.duckdb")
    with Store(folder / "study.duckdb", read_only=True) as store:
        report = build_report(store, contrast=("official", "obscure-hack"),
                              study=StudyInputs(StudySettings(exposure="exposure")))
    return truth, report


def cells_of(truth, model):
    x = np.array([truth.exposure[i] for i in truth.item_ids])
    y = np.array([truth.correct[(i, model)] for i in truth.item_ids])
    return x, y


@pytest.mark.parametrize("model", MODELS)
def test_each_models_odds_ratio_is_statsmodels_logit(study, model):
    truth, report = study
    x, y = cells_of(truth, model)
    expected = sm.Logit(y, sm.add_constant(x)).fit(disp=0)
    row = next(r for r in report.exposure["per_model"] if r["model"] == model)
    low, high = expected.conf_int()[1]
    assert row["odds_ratio"] == pytest.approx(np.exp(expected.params[1]), rel=1e-6)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((np.exp(low), np.exp(high)), rel=1e-6)
    assert row["wald_p"] == pytest.approx(expected.pvalues[1], rel=1e-6)
    lr = 2 * (expected.llf - sm.Logit(y, np.ones((len(y), 1))).fit(disp=0).llf)
    assert row["lr_statistic"] == pytest.approx(lr, rel=1e-6)
    assert row["lr_p"] == pytest.approx(sps.chi2.sf(lr, 1), rel=1e-6)
    assert (row["exposure_min"], row["exposure_max"], row["n"]) == (x.min(), x.max(), len(x))
    assert row["odds_ratio"] > 1.5 and row["reason"] is None  # the store's chance rises with exposure


def pooled_design(truth):
    rows = [(i, m, truth.exposure[i], truth.correct[(i, m)]) for m in MODELS for i in truth.item_ids]
    frame = pd.DataFrame(rows, columns=["item", "model", "x", "y"])
    exog = np.column_stack([np.ones(len(frame)), frame["x"], (frame["model"] == MODELS[1]).astype(float)])
    return frame, exog


def test_the_pooled_fit_is_statsmodels_cluster_robust_logit(study):
    truth, report = study
    frame, exog = pooled_design(truth)
    groups = pd.factorize(frame["item"])[0]
    expected = sm.Logit(frame["y"].to_numpy(), exog).fit(
        disp=0, cov_type="cluster", cov_kwds={"groups": groups, "use_correction": True})
    pooled = report.exposure["pooled"]
    assert pooled["odds_ratio"] == pytest.approx(np.exp(expected.params[1]), rel=1e-6)
    assert pooled["se"] == pytest.approx(expected.bse[1], rel=1e-6)
    low, high = expected.conf_int()[1]
    assert (pooled["ci_low"], pooled["ci_high"]) == pytest.approx((np.exp(low), np.exp(high)), rel=1e-6)
    assert pooled["wald_p"] == pytest.approx(expected.pvalues[1], rel=1e-6)
    assert (pooled["n"], pooled["items"], pooled["models"]) == (180, 90, list(MODELS))


def test_the_pooled_standard_error_is_the_clustered_sandwich_written_out(study):
    """The same SE from the formula: V = c · H⁻¹ (Σ_g s_g s_gᵀ) H⁻¹, c = G/(G−1)·(N−1)/(N−K)."""
    truth, report = study
    frame, exog = pooled_design(truth)
    beta = sm.Logit(frame["y"].to_numpy(), exog).fit(disp=0).params
    p = 1 / (1 + np.exp(-exog @ beta))
    bread = np.linalg.inv((exog * (p * (1 - p))[:, None]).T @ exog)
    scores = pd.DataFrame(exog * (frame["y"].to_numpy() - p)[:, None]).groupby(frame["item"]).sum().to_numpy()
    g, n, k = len(scores), len(frame), exog.shape[1]
    covariance = g / (g - 1) * (n - 1) / (n - k) * bread @ (scores.T @ scores) @ bread
    assert report.exposure["pooled"]["se"] == pytest.approx(np.sqrt(covariance[1, 1]), rel=1e-6)


def test_correct_is_the_human_label_else_the_judges_and_the_section_counts_each(study):
    truth, report = study
    counts = report.exposure["correct"]
    judged = sum(1 for s in truth.source.values() if s == "judge")
    assert counts == {"human": len(truth.source) - judged, "judge": judged, "unanswered": 0, "unlabelled": 0}
    assert 0 < judged < len(truth.source)


def test_quintiles_hold_every_cell_once_with_wilson_intervals(study):
    truth, report = study
    rows = report.exposure["quintiles"]
    assert sorted({r["quintile"] for r in rows}) == [1, 2, 3, 4, 5]
    for model in MODELS:
        mine = [r for r in rows if r["model"] == model]
        assert sum(r["n"] for r in mine) == len(truth.item_ids)
        assert sum(r["right"] for r in mine) == sum(truth.correct[(i, model)] for i in truth.item_ids)
        for r in mine:
            ci = sps.binomtest(r["right"], r["n"]).proportion_ci(method="wilson")
            assert (r["ci_low"], r["ci_high"]) == pytest.approx((ci.low, ci.high))
            assert r["exposure_low"] <= r["exposure_mean"] <= r["exposure_high"]


@pytest.mark.parametrize("x, y, reason", [
    ([1, 2, 3, 4], [0, 0, 1, 1], "perfect separation"),
    ([1, 2, 2, 4], [0, 1, 0, 1], "perfect separation"),  # quasi-complete: they meet at 2
    ([1, 3, 2, 4], [0, 0, 1, 1], None),
    ([1, 2, 3], [1, 1, 1], "every answer is right"),
    ([2, 2, 2], [0, 1, 0], "same exposure"),
])
def test_a_fit_without_a_finite_estimate_says_why(x, y, reason):
    found = unfit_reason(np.array(x, float), np.array(y))
    assert (found is None) if reason is None else (reason in found)


def test_contam_report_writes_the_exposure_section_figure_and_tables(tmp_path, contam):
    build_study_store(tmp_path / "s.duckdb")
    config = write_study_config(tmp_path, released=None, subsets=())
    status, out, err = contam("report", "--store", tmp_path / "s.duckdb", "--out", tmp_path / "out",
                              "--config", config, "--contrast", CONTRAST)
    assert status == 0, err
    folder = tmp_path / "out"
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    assert "## Exposure" in markdown and "![Figure 5." in markdown and "Pooled" in markdown
    assert "## Before and after" not in markdown  # only what the settings ask for
    for suffix in ("png", "pdf"):
        assert (folder / f"fig5_exposure.{suffix}").stat().st_size > 1000
    assert "<h2>Exposure</h2>" in (folder / "report.html").read_text(encoding="utf-8")
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    assert report["study"]["settings_from"] == str(config)
    with (folder / "tables" / "exposure_by_model.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["scope"] for r in rows] == ["model", "model", "pooled"]
    assert float(rows[0]["odds_ratio"]) == pytest.approx(report["exposure"]["per_model"][0]["odds_ratio"])
    assert r"\toprule" in (folder / "tables" / "exposure_quintiles.tex").read_text(encoding="utf-8")


def test_without_study_settings_the_report_has_no_study_keys(tmp_path):
    build_study_store(tmp_path / "s.duckdb")
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        report = build_report(store, contrast=("official", "obscure-hack"))
    assert not {"study", "exposure", "cutoff", "tiers"} & set(report.to_json())


def test_the_newest_runs_recorded_settings_are_used_without_config(tmp_path, contam):
    build_study_store(tmp_path / "s.duckdb")
    record = {"study": StudySettings(exposure="exposure").to_record(), "models": []}
    with Store(tmp_path / "s.duckdb") as store:
        store.append("runs", [{"run_id": "r1", "kind": "run", "config": json.dumps(record)}])
    status, out, err = contam("report", "--store", tmp_path / "s.duckdb", "--format", "json",
                              "--contrast", CONTRAST)
    assert status == 0, err
    report = json.loads(out)
    assert report["study"]["settings_from"] == "the newest run's record" and report["exposure"]["pooled"]


@pytest.mark.parametrize("value", ["lots", "1,5", "nan"])
def test_a_non_numeric_exposure_is_one_line_naming_the_item_and_nothing_is_written(tmp_path, contam, value):
    build_study_store(tmp_path / "s.duckdb", bad_exposure=value)
    config = write_study_config(tmp_path, released=None, subsets=())
    status, out, err = contam("report", "--store", tmp_path / "s.duckdb", "--out", tmp_path / "out",
                              "--config", config, "--contrast", CONTRAST)
    assert status == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and "items.csv" in line and "'i017'" in line and repr(value) in line
    assert "[study] exposure" in line and "not a number" in line
    assert not (tmp_path / "out").exists()


def test_an_exposure_column_no_item_has_is_refused(tmp_path, contam):
    build_study_store(tmp_path / "s.duckdb")
    config = write_study_config(tmp_path, exposure="exposur", released=None, subsets=())
    status, _, err = contam("report", "--store", tmp_path / "s.duckdb", "--out", tmp_path / "out",
                            "--config", config, "--contrast", CONTRAST)
    assert status == 2 and "'exposur'" in err and "exposure, released" in err
    assert not (tmp_path / "out").exists()


def test_the_study_kit_matches_its_own_labels(tmp_path):
    """The kit's truth is what the store says (the tests above lean on it)."""
    truth = build_study_store(tmp_path / "s.duckdb")
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        judged = store.query(f"SELECT count(*) FROM labels WHERE rater = '{JUDGE}'")[0][0]
        tiers = {r[0] for r in store.query("SELECT DISTINCT subset FROM items")}
    assert judged == sum(1 for s in truth.source.values() if s == "judge") and tiers == set(TIERS)


def test_the_correct_rule_cell_by_cell():
    """Human label first, else the judge's; an empty or missing answer is wrong whatever its label
    (the Cells' effective columns); an answered cell with neither label is left out."""
    from contam.harness.report.inputs.correct import correct_cells, source_counts

    frame = pd.DataFrame([
        # has_answer, empty, human_raw, judge_raw, human (effective), judge (effective)
        (True, False, "right", "wrong", "right", "wrong"),
        (True, False, None, "right", None, "right"),
        (True, False, None, "partial", None, "partial"),
        (True, True, "right", None, "wrong", "wrong"),
        (False, False, None, None, "wrong", "wrong"),
        (True, False, None, None, None, None),
    ], columns=["has_answer", "empty", "human_raw", "judge_raw", "human", "judge"])
    cells = correct_cells(frame)
    assert list(cells["source"]) == ["human", "judge", "judge", "human", "unanswered"]
    assert list(cells["correct"]) == [1, 1, 0, 0, 0]
    assert source_counts(cells, frame) == {"human": 2, "judge": 2, "unanswered": 1, "unlabelled": 1}


def test_the_calls_are_read_from_label_columns_whose_categories_differ():
    """The cells frame holds its labels as categoricals (store/frames.py): a human column that
    only ever says "wrong" beside a judge column that only says "right" still gives each cell its call."""
    from contam.harness.report.inputs.correct import correct_cells

    frame = pd.DataFrame({"has_answer": [True, True], "empty": [False, False],
                          "human_raw": ["wrong", None], "judge_raw": [None, "right"],
                          "human": pd.Categorical(["wrong", None]),
                          "judge": pd.Categorical([None, "right"])})
    cells = correct_cells(frame)
    assert list(cells["source"]) == ["human", "judge"] and list(cells["correct"]) == [0, 1]


def test_an_item_without_an_exposure_value_is_left_out_with_a_note(tmp_path):
    truth = build_study_store(tmp_path / "s.duckdb", bad_exposure="  ")
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        report = build_report(store, contrast=("official", "obscure-hack"),
                              study=StudyInputs(StudySettings(exposure="exposure")))
    part = report.exposure
    assert part["items_without_value"] == 1 and part["items"] == len(truth.item_ids) - 1
    assert all(r["n"] == len(truth.item_ids) - 1 for r in part["per_model"])
    assert any(n.section == "exposure" and "1 item(s) have no 'exposure'" in n.reason
               for n in report.notes)



def test_a_store_without_labels_leaves_the_exposure_section_out_and_says_why(tmp_path):
    from contam.harness.report.texts.markdown import render_markdown

    build_study_store(tmp_path / "s.duckdb", labels=False)
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        report = build_report(store, contrast=("official", "obscure-hack"),
                              study=StudyInputs(StudySettings(exposure="exposure")))
    assert report.exposure is None and "exposure" not in report.to_json()
    assert [r["section"] for r in report.not_in_report if "right or wrong" in r["reason"]] == ["Exposure"]
    md = render_markdown(report)
    assert "## Exposure" not in md and "fig5_exposure" not in md and "no pooled fit" not in md

