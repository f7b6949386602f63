"""The report's ordered tiers (`[study] subsets`): each tier's accuracy with its Wilson interval
from the store's own cells, the Cochran–Armitage trend test against statsmodels' linear-by-linear
association test and a logistic score test, `--contrast` still picking two subsets, and a tier
the store lacks refused in one line."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats as sps
from statsmodels.stats.contingency_tables import Table

from contam.harness.report.analysis import build_report
from contam.harness.report.inputs.study_settings import StudyInputs
from contam.harness.report.parts.tiers import cochran_armitage
from contam.harness.store import Store
from contam.harness.study import StudySettings
from tests.studykit import MODELS, TIERS, build_study_store, write_study_config


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiers")
    truth = build_study_store(folder / "s.duckdb")
    with Store(folder / "s.duckdb", read_only=True) as store:
        report = build_report(store, contrast=("popular-hack", "obscure-hack"),
                              study=StudyInputs(StudySettings(subsets=TIERS)))
    return truth, report


@pytest.mark.parametrize("right, n", [([15, 9, 3], [20, 22, 18]), ([5, 6, 7, 9], [10, 10, 10, 11]),
                                      ([0, 4], [8, 9])])
def test_cochran_armitage_is_statsmodels_linear_by_linear_rescaled(right, n):
    """statsmodels' ordinal association test uses variance divisor N − 1, Cochran–Armitage N."""
    table = np.array([[k, m - k] for k, m in zip(right, n)])
    expected = Table(table, shift_zeros=False).test_ordinal_association(row_scores=np.arange(len(n)), col_scores=np.array([1, 0]))
    z, p = cochran_armitage(right, n)
    total = sum(n)
    assert z * math.sqrt((total - 1) / total) == pytest.approx(expected.zscore)
    assert p == pytest.approx(2 * sps.norm.sf(abs(z)))


def test_cochran_armitage_is_the_score_test_of_the_linear_logistic_model():
    """The same Z² as the Rao score test of β = 0 in logit P(right) = α + β·score."""
    right, n = [12, 9, 4], [20, 20, 20]
    score = np.repeat(np.arange(3.0), n)
    y = np.concatenate([[1] * k + [0] * (m - k) for k, m in zip(right, n)])
    restricted = sm.GLM(y, np.column_stack([np.ones_like(score), score]), family=sm.families.Binomial())
    statistic = restricted.score_test(np.array([np.log(25 / 35), 0.0]), k_constraints=1)[0]
    assert cochran_armitage(right, n)[0] ** 2 == pytest.approx(float(np.squeeze(statistic)), rel=1e-6)


def test_undefined_trends_are_nan():
    assert all(math.isnan(v) for v in cochran_armitage([3, 3], [3, 3]))  # every answer right
    assert all(math.isnan(v) for v in cochran_armitage([], []))


@pytest.mark.parametrize("model", MODELS)
def test_each_tiers_accuracy_and_the_trend_come_from_the_cells(study, model):
    truth, report = study
    rows = {r["subset"]: r for r in report.tiers["per_tier"] if r["model"] == model}
    right = [sum(truth.correct[(i, model)] for i in truth.item_ids if truth.tier[i] == t) for t in TIERS]
    n = [sum(1 for i in truth.item_ids if truth.tier[i] == t) for t in TIERS]
    assert [(rows[t]["right"], rows[t]["n"]) for t in TIERS] == list(zip(right, n))
    for t, k, m in zip(TIERS, right, n):
        ci = sps.binomtest(k, m).proportion_ci(method="wilson")
        assert (rows[t]["ci_low"], rows[t]["ci_high"]) == pytest.approx((ci.low, ci.high))
    trend = next(r for r in report.tiers["trend"] if r["model"] == model)
    assert (trend["z"], trend["p"]) == pytest.approx(cochran_armitage(right, n))
    assert trend["z"] < 0  # the kit's first tier is the most exposed: accuracy falls along the list


def test_contrast_still_picks_two_subsets(study):
    _, report = study
    assert report.contrast == {"documented": "popular-hack", "undocumented": "obscure-hack"}
    # model-a's obscure-hack cells carry the judge's labels only (tests.studykit), so the human
    # gap has no row for it: a model labelled on one side of the contrast gets none
    assert {r["model"] for r in report.gap} == {"model-b"}


def test_contam_report_writes_the_tiers_tables(tmp_path, contam):
    build_study_store(tmp_path / "s.duckdb")
    config = write_study_config(tmp_path, exposure=None, released=None)
    status, out, err = contam("report", "--store", tmp_path / "s.duckdb", "--format", "md",
                              "--config", config, "--contrast", "official,obscure-hack")
    assert status == 0, err
    assert "## Accuracy across ordered tiers" in out and "official → popular-hack → obscure-hack" in out
    assert "| Model | official | popular-hack | obscure-hack |" in out and "Cochran–Armitage" in out


@pytest.mark.parametrize("subsets, message", [
    (("official", "popular-hak"), "'popular-hak' has no items"),
])
def test_a_tier_list_the_store_cannot_give_is_one_line(tmp_path, contam, subsets, message):
    build_study_store(tmp_path / "s.duckdb")
    config = write_study_config(tmp_path, exposure=None, released=None, subsets=subsets)
    status, _, err = contam("report", "--store", tmp_path / "s.duckdb", "--out", tmp_path / "out",
                            "--config", config, "--contrast", "official,obscure-hack")
    assert status == 2 and message in err and "\n" not in err.strip()
    assert not (tmp_path / "out").exists()
