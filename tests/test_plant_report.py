"""The report's "Probe validation" section on a store built in the test: its AUCs, ROC curves and
TPRs at 5% FPR against scikit-learn's, the planted and not-planted shares, the base model as the
negative control said plainly, and the files `contam report` writes (report.json's key, the CSV
table, the ROC and dose figures)."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score, roc_curve

from contam.harness.report.model import Report
from contam.harness.jobs.report import report
from contam.harness.report.parts.validation import build, section, tpr_at_fpr
from contam.harness.store import Store, utc_now
from contam.harness.store.plantings import record_planting

ITEMS = [f"i{n:02d}" for n in range(30)]
PLANTED = ITEMS[::2]


def _scores(rng, shift: float) -> dict[str, float]:
    """A score per item; the planted items' shifted up by ``shift`` (0: no signal)."""
    return {item: float(rng.normal(shift if item in PLANTED else 0.0)) for item in ITEMS}


def _build_store(path, doses=(1, 3), base_shift=0.0):
    """Items in subsets official/fan, a planting per dose of model ``base``, min-k and cdd scores
    of each planted model and of the base; returns {model: {metric: {item: value}}}."""
    rng = np.random.default_rng(7)
    truth = {"base": {"min_k": _scores(rng, base_shift), "flagged": _flags(rng, 0.2, 0.2)}}
    truth.update({f"text-e{d}": {"min_k": _scores(rng, d), "flagged": _flags(rng, 0.8, 0.1)}
                  for d in doses})
    models = [{"name": "base", "provider": "local", "model": "base.gguf"}]
    models += [{"name": f"text-e{d}", "provider": "local", "model": f"planted:t-e{d}"}
               for d in doses]
    with Store(path, create=True) as store:
        with store.transaction():
            store.append("items", [{"item_id": i, "title": "T", "subset": ("official", "fan")[n % 3 == 0],
                                    "question": f"Q{i}?", "reference": "R"} for n, i in enumerate(ITEMS)])
            store.append("runs", [{"run_id": "r1", "kind": "probe",
                                   "config": json.dumps({"models": models})}])
            store.append("probe_scores", [
                {"probe": "min-k" if metric == "min_k" else "cdd", "params_sha256": "p",
                 "item_id": item, "model": model, "metric": metric, "value": value,
                 "created_at": utc_now()}
                for model, metrics in truth.items() for metric, values in metrics.items()
                for item, value in values.items()])
        for d in doses:
            record_planting(store, _planting(f"planted:t-e{d}", d))
    return truth


def _flags(rng, planted_rate: float, other_rate: float) -> dict[str, float]:
    return {item: float(rng.random() < (planted_rate if item in PLANTED else other_rate))
            for item in ITEMS}


def _planting(name: str, epochs: int) -> dict:
    return {"name": name, "base_name": "base", "base_model": "base.gguf", "planted_items": PLANTED,
            "format": "text", "share": 0.5, "epochs": epochs, "learning_rate": 1e-4,
            "batch_size": 4, "max_length": 256, "seed": 0, "device": "cpu",
            "loss_per_epoch": [2.0] * epochs, "weights_sha256": "ab" * 32,
            "versions": {"torch": "x"}, "wall_s": 1.0, "created_at": utc_now()}


def _part(path):
    with Store(path, read_only=True) as store:
        return build(store)


def _sklearn(values: dict[str, float]) -> tuple[float, float]:
    """(AUC, TPR at 5% FPR) by scikit-learn."""
    truth = [item in PLANTED for item in values]
    scores = list(values.values())
    fpr, tpr, _ = roc_curve(truth, scores)
    return roc_auc_score(truth, scores), max(t for f, t in zip(fpr, tpr) if f <= 0.05)


def test_auc_and_tpr_agree_with_scikit_learn(tmp_path):
    truth = _build_store(tmp_path / "s.duckdb")
    part = _part(tmp_path / "s.duckdb")
    rows = {(r["planting"], r["model"], r["metric"]): r for r in part["rows"]}
    assert {(p, m) for p, m, _ in rows} == {  # the base once: both plantings drew the same items
        ("planted:t-e1", "text-e1"), ("planted:t-e3", "text-e3"),
        ("planted:t-e1, planted:t-e3", "base")}
    for (planting, model, metric), row in rows.items():
        auc, tpr = _sklearn(truth[model][metric])
        assert row["auc"] == pytest.approx(auc)
        assert row["tpr_at_5_fpr"] == pytest.approx(tpr)
        assert row["role"] == ("base" if model == "base" else "planted")
        assert (row["planted_n"], row["unplanted_n"]) == (15, 15)
        assert row["auc_ci_low"] <= row["auc"] <= row["auc_ci_high"]
    flagged = rows[("planted:t-e3", "text-e3", "flagged")]
    values = truth["text-e3"]["flagged"]
    assert flagged["planted_mean"] == pytest.approx(np.mean([values[i] for i in PLANTED]))
    assert flagged["unplanted_mean"] == pytest.approx(
        np.mean([v for i, v in values.items() if i not in PLANTED]))


def test_the_roc_points_are_scikit_learns_curve(tmp_path):
    truth = _build_store(tmp_path / "s.duckdb", doses=(3,))
    row = next(r for r in _part(tmp_path / "s.duckdb")["rows"]
               if r["model"] == "text-e3" and r["metric"] == "min_k")
    values = truth["text-e3"]["min_k"]
    fpr, tpr, _ = roc_curve([i in PLANTED for i in values], list(values.values()),
                            drop_intermediate=False)
    assert row["roc_fpr"] == pytest.approx(list(fpr))
    assert row["roc_tpr"] == pytest.approx(list(tpr))
    assert tpr_at_fpr([0.0, 0.04, 0.2, 1.0], [0.0, 0.5, 0.9, 1.0], 0.05) == 0.5


def test_a_base_model_that_separates_the_items_is_said_plainly(tmp_path):
    _build_store(tmp_path / "s.duckdb", doses=(1,), base_shift=3.0)
    part = _part(tmp_path / "s.duckdb")
    text = " ".join(section(Report(validation=part)).paragraphs)
    assert re.search(r"Negative control: on base model base, which never saw any item, Min-K%'s "
                     r"AUC 0\.\d+ lies at the 100\.0% percentile of re-drawn planted sets "
                     r"\(permutation p [^,]+, Holm p [^,]+ over its 2 measures", text), text
    assert "cdd flagged's AUC" not in text  # no signal there: the base alarms only where it should
    _build_store(tmp_path / "clean.duckdb", doses=(1,), base_shift=0.0)
    clean = _part(tmp_path / "clean.duckdb")
    base = [r for r in clean["rows"] if r["role"] == "base"]
    assert base and all(r["perm_p_holm"] >= 0.05 and r["family_size"] == 2 for r in base)
    assert ("Negative control: on no base model does any measure separate the planted items beyond "
            "chance (Holm-adjusted permutation p ≥ 0.05 in every family; base on the items of "
            "planted:t-e1: 2 measure(s))") in " ".join(
        section(Report(validation=clean)).paragraphs)


def test_the_report_writes_the_section_its_table_and_figures(tmp_path):
    _build_store(tmp_path / "s.duckdb")
    result = report(store=tmp_path / "s.duckdb", out=tmp_path / "out", contrast="official,fan")
    out = tmp_path / "out"
    saved = json.loads((out / "report.json").read_text())
    assert len(saved["validation"]["rows"]) == 6  # 2 measures x (2 planted models, the base once)
    with (out / "tables" / "probe_validation.csv").open() as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == 6 and "roc_fpr" not in table[0]
    assert float(table[0]["auc"]) == pytest.approx(saved["validation"]["rows"][0]["auc"])
    for name in ("fig_validation_roc", "fig_validation_dose"):
        assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    markdown = (out / "report.md").read_text()
    assert "## Probe validation (planted contamination)" in markdown
    assert "weights sha256 abababababab…; training 1 s." in markdown  # the time labelled as what it is
    assert result.report.validation is not None


def test_a_store_without_plantings_has_no_section(tmp_path):
    with Store(tmp_path / "s.duckdb", create=True) as store:
        assert build(store) is None
    assert section(Report(validation=None)) is None


def test_the_base_model_is_shown_once_per_distinct_planted_set(tmp_path):
    _build_store(tmp_path / "s.duckdb", doses=(1, 3))
    with Store(tmp_path / "s.duckdb") as store:
        record_planting(store, {**_planting("planted:other", 1), "planted_items": ITEMS[1::2]})
    part = _part(tmp_path / "s.duckdb")
    base = {(r["planting"], r["family"]) for r in part["rows"] if r["role"] == "base"}
    assert {planting for planting, _ in base} == {"planted:t-e1, planted:t-e3", "planted:other"}
    assert len({family for _, family in base}) == 2
    assert sum(r["role"] == "base" for r in part["rows"]) == 4  # 2 measures x 2 planted sets
    text = " ".join(section(Report(validation=part)).paragraphs)
    assert "base on the items of planted:other: 2 measure(s)" in text


def _guided_scores(store, rng) -> None:
    """guided's six scores for every item, on the base model and text-e3 (planted items higher)."""
    metrics = ("rouge_l_guided", "rouge_l_general", "rouge_l_diff",
               "bleu2_guided", "bleu2_general", "bleu2_diff")
    with store.transaction():
        store.append("probe_scores", [
            {"probe": "guided", "params_sha256": "g", "item_id": item, "model": model,
             "metric": metric, "value": float(rng.normal(shift if item in PLANTED else 0.0)),
             "created_at": utc_now()}
            for model, shift in (("base", 0.0), ("text-e3", 2.0)) for metric in metrics
            for item in ITEMS])


def test_guided_shows_every_score_it_stores_in_the_family(tmp_path):
    _build_store(tmp_path / "s.duckdb", doses=(3,))
    with Store(tmp_path / "s.duckdb") as store:
        _guided_scores(store, np.random.default_rng(1))
    part = _part(tmp_path / "s.duckdb")
    guided = [r for r in part["rows"] if r["source"] == "guided" and r["model"] == "text-e3"]
    assert [r["measure"] for r in guided] == [
        "guided ROUGE-L (guided)", "guided ROUGE-L (general)", "guided ROUGE-L difference",
        "guided BLEU-2 (guided)", "guided BLEU-2 (general)", "guided BLEU-2 difference"]
    assert all(r["direction"] == "higher" and r["auc"] > 0.8 for r in guided)
    assert {r["family_size"] for r in part["rows"] if r["model"] == "text-e3"} == {8}
    markdown = section(Report(validation=part)).tables[0].rows
    assert sum(row[3].startswith("guided ") for row in markdown) == 12  # base and text-e3


def test_a_measure_declared_lower_is_read_that_way_round(tmp_path, monkeypatch):
    from dataclasses import replace

    from contam.harness.report.parts import validation

    _build_store(tmp_path / "s.duckdb", doses=(3,))
    higher = next(r for r in _part(tmp_path / "s.duckdb")["rows"]
                  if r["model"] == "text-e3" and r["metric"] == "min_k")
    key = ("min-k", "min_k")
    monkeypatch.setitem(validation.READINGS, key, replace(validation.READINGS[key], direction="lower"))
    lower = next(r for r in _part(tmp_path / "s.duckdb")["rows"]
                 if r["model"] == "text-e3" and r["metric"] == "min_k")
    assert lower["direction"] == "lower" and lower["auc"] == pytest.approx(1 - higher["auc"])
    assert lower["planted_mean"] == pytest.approx(higher["planted_mean"])  # the means as stored
    assert lower["perm_percentile"] == pytest.approx(1 - higher["perm_percentile"])
