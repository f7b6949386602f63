"""The report's statistics at the edges the data can reach: separation in the pooled exposure fit,
a cut-off with an empty side, a model labelled on one side of the contrast, blank and unanswered
cells in κ, the probes' Holm family as counted, and one model's pooled exposure row."""

from __future__ import annotations

import datetime
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from sklearn.metrics import cohen_kappa_score

from contam.harness.report.model import Report
from contam.harness.report.parts import exposure
from contam.harness.report.statistics import logistic
from contam.harness.report.statistics import holm as probe_holm
from contam.harness.report.analysis import build_report
from contam.harness.report.inputs.study_settings import StudyInputs
from contam.harness.report.texts.study import exposure_section
from contam.harness.store import Store, utc_now
from contam.harness.study import StudySettings
from tests.studykit import build_study_store


def cells(rows) -> pd.DataFrame:
    """(model, item, exposure, correct) rows as the exposure fits take them (an item keyed by
    its seq, as in the report's cells frame)."""
    return pd.DataFrame(rows, columns=["model", "item_seq", "exposure", "correct"])


def separated(model: str, shift: float) -> list[tuple]:
    """Right exactly where exposure is above ``shift``: perfect separation for ``model``."""
    return [(model, n, n / 2, int(n / 2 > shift)) for n in range(12)]


def test_pooled_exposure_fit_with_every_model_separated_is_not_estimable():
    data = cells(separated("a", 2.2) + separated("b", 3.2))
    assert all("perfect separation" in exposure.model_fit(m, data[data["model"] == m])["reason"]
               for m in ("a", "b"))
    notes: list = []
    pooled = exposure.pooled_fit(data, ["a", "b"], notes)
    assert pooled["reason"].startswith("not estimable: separation")
    assert math.isnan(pooled["odds_ratio"]) and math.isnan(pooled["wald_p"])
    with warnings.catch_warnings():  # what the fit alone would print: an odds ratio off the scale
        warnings.simplefilter("ignore")
        raw = sm.Logit(data["correct"], exposure.design(data, ["a", "b"])).fit(disp=0)
    assert np.exp(raw.params.iloc[1]) > 1e3


def test_pooled_exposure_fit_of_models_separated_in_opposite_directions_is_estimated():
    flipped = [(m, i, x, 1 - y) for m, i, x, y in separated("b", 3.2)]
    pooled = exposure.pooled_fit(cells(separated("a", 2.2) + flipped), ["a", "b"], [])
    assert pooled["reason"] is None and pooled["odds_ratio"] == pytest.approx(1.0)  # the two cancel out


def test_one_models_pooled_exposure_row_is_labelled_as_its_item_clustered_fit():
    rng = np.random.default_rng(1)
    data = cells([("solo", f"i{n}", x, int(rng.random() < 1 / (1 + math.exp(2 - x))))
                  for n, x in enumerate(rng.uniform(0, 4, 80))])
    part = {"column": "pop", "correct": {"human": 80}, "per_model": [exposure.model_fit("solo", data)],
            "pooled": exposure.pooled_fit(data, ["solo"], []), "quintiles": []}
    section = exposure_section(Report(exposure=part, study={"settings_from": "a test"}))
    names = [row[0] for row in section.tables[0].rows]
    assert names == ["solo", "solo (item-clustered fit)"]
    assert not any("fixed effect" in p for p in section.paragraphs)
    assert any("one model, solo: its own fit with item-clustered errors" in p for p in section.paragraphs)


def test_a_cutoff_with_an_empty_side_has_no_p_and_leaves_the_holm_family(tmp_path):
    build_study_store(tmp_path / "s.duckdb")
    cutoffs = {"model-a": datetime.date(2024, 6, 30), "model-b": datetime.date(2020, 1, 1)}  # b: no item before
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        report = build_report(store, contrast=("official", "obscure-hack"),
                              study=StudyInputs(StudySettings(released="released"), cutoffs))
    rows = {r["model"]: r for r in report.cutoff["per_model"]}
    assert rows["model-b"]["before_n"] == 0 and rows["model-b"]["fisher_p"] is None
    assert rows["model-b"]["odds_ratio"] is None and math.isnan(rows["model-b"]["fisher_p_holm"])
    assert rows["model-a"]["fisher_p_holm"] == pytest.approx(rows["model-a"]["fisher_p"])  # a family of one
    assert "(1 test)" in rows["model-a"]["holm_family"]


def test_the_gap_logistic_leaves_out_a_model_labelled_on_one_side_only():
    rng = np.random.default_rng(5)
    rows = [(m, n, "doc" if n % 2 else "undoc", "right" if rng.random() < 0.5 + 0.2 * (n % 2) else "wrong")
            for m in ("m1", "m2") for n in range(60)]
    rows += [("m3", n, "doc", "right" if n % 3 else "wrong") for n in range(1, 60, 2)]
    frame = pd.DataFrame(rows, columns=["model", "item_seq", "subset", "human"])
    notes: list = []
    fit = logistic.logistic(frame, ("doc", "undoc"), ["m1", "m2", "m3"], notes)
    assert fit is not None and fit["n"] == 120
    assert not any("m3" in t["term"] for t in fit["terms"])
    assert any(n["reason"].startswith("m3 labelled on one subset only") for n in notes)


def kappa_store(path):
    """One model, six items both raters labelled: four answered, one blank, one never answered."""
    labels = [("right", "right"), ("wrong", "right"), ("right", "right"), ("partial", "wrong"),
              ("right", "right"), ("wrong", "wrong")]
    answers = ["a1", "a2", "a3", "a4", "  "]  # i5's answer is blank; i6 has none
    now = utc_now()
    with Store(path, create=True) as store:
        store.append("items", [{"item_id": f"i{n}", "title": "T", "subset": "canon", "question": "q?",
                                "reference": "r", "added_at": now} for n in range(1, 7)])
        store.append("answers", [{"item_id": f"i{n}", "model": "m", "answer": a, "answer_raw": a,
                                  "created_at": now} for n, a in enumerate(answers, 1)])
        store.append("labels", [{"item_id": f"i{n}", "model": "m", "rater": rater, "label": label,
                                 "created_at": now} for n, pair in enumerate(labels, 1)
                                for rater, label in zip(("human", "judge:j"), pair)])
    return path, labels[:4]


def test_kappa_counts_blank_and_unanswered_cells_apart(tmp_path):
    path, answered = kappa_store(tmp_path / "k.duckdb")
    with Store(path, read_only=True) as store:
        agreement = build_report(store).agreement
    human, judge = zip(*answered)
    assert agreement["imputed"] == 2 and agreement["pooled"]["n"] == 4
    assert agreement["pooled"]["kappa"] == pytest.approx(cohen_kappa_score(human, judge))


def test_the_probes_holm_family_is_counted_as_the_data_has_it():
    guided = [{"model": "m1", "p": 0.01 * k} for k in range(1, 9)]  # two measures × three tiers + two
    probes = {"guided": {"differences": guided}, "cdd": {"contrast": [{"model": "m1", "fisher_p": None}]}}
    sentence = probe_holm.family_sentence(probes)
    assert sentence.startswith(probe_holm.SENTENCE)
    assert sentence.endswith("The families count m1: 8 (guided 8) p-values.")  # an undefined p is not counted
    assert "six" not in sentence
