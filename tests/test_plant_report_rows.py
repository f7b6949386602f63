"""The "Probe validation" rows of ts-guess's exact match, guided's ROUGE-L difference and the
density study's own accuracy (right, contains, exact, BLEU-2), on a store built in the test,
against an independent computation: numpy's means, scikit-learn's AUC and TPR at 5% FPR, scipy's
two-sided Mann-Whitney p, on the planted model and on its base. The values have ties and gaps on
purpose: an item a model never answered, a score stored as NULL (ts-guess found no word to mask),
a cell with no label, a human label overriding the judge's both ways, a retracted human label."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import mannwhitneyu
from sklearn.metrics import roc_auc_score, roc_curve

from contam.harness.report.model import Report
from contam.harness.report.parts.validation import MAX_FPR, MEASURES, READINGS, build, section
from contam.harness.store import Store, utc_now
from contam.harness.store.plantings import record_planting

ITEMS = [f"q{n:02d}" for n in range(63)]
PLANTED = [item for n, item in enumerate(ITEMS) if n % 3 != 1]  # 42 and 21: 20 answered, so FPR 5% is a step
MODELS = {"planted": "qa-e3", "base": "base"}
PROBE_MEASURES = [("ts-guess", "exact_match"), ("guided", "rouge_l_diff")]
DENSITY = ["right", "contains", "exact", "bleu2"]
JUDGE = "judge:gpt-test"

# The cases each model's data holds on purpose (items by index; planted unless n % 3 == 1).
NEVER_ANSWERED = {0, 1}  # no probe score, no answer; a label and scores all the same
NULL_SCORE = {2, 4}  # the probes stored NULL: ts-guess found no word to mask, guided no split
NO_LABEL = {6, 7}  # answered, never labelled: no "right"
HUMAN_OVERRIDES = {3: ("wrong", "right"), 4: ("right", "wrong"), 5: ("partial", None),
                   9: ("right", None)}  # item: (human, judge)
RETRACTED_HUMAN = {10: ("wrong", "right")}  # item: (retracted human label, judge's)
NO_BLEU = {8}
# ts-guess rescored under params a, then b: the latest row counts, a NULL one as no score
RESCORED = {11: (1.0, 0.0), 12: (0.0, 1.0), 13: (1.0, None)}


def _truth(rng, signal: float) -> dict:
    """What one model's rows say, per item: probe values (None: stored NULL; absent: never
    scored), the answer, human and judge labels, and the rule metrics. ``signal``: how much more
    often planted items score high (0: the base model, no signal)."""
    truth = {}
    for n, item in enumerate(ITEMS):
        lift = signal if item in PLANTED else 0.0
        row = {"exact_match": float(rng.random() < 0.3 + lift),
               "rouge_l_diff": round(float(rng.normal(lift)), 1),  # one decimal: ties
               "answer": f"answer {n}", "human": None, "retracted": None,
               "judge": ("right", "wrong")[int(rng.random() < 0.6 - lift)],
               "contains": float(rng.random() < 0.4 + lift), "exact": float(rng.random() < 0.2 + lift),
               "bleu2": round(float(rng.random()) * (1 + lift), 1)}
        if n in NULL_SCORE:
            row["exact_match"] = row["rouge_l_diff"] = None
        if n in NEVER_ANSWERED:
            row["answer"] = None
            row["human"] = "right"  # labelled (and scored) without an answer: not a cell of the study
        if n in NO_LABEL:
            row["judge"] = None
        if n in HUMAN_OVERRIDES:
            row["human"], row["judge"] = HUMAN_OVERRIDES[n]
        if n in RETRACTED_HUMAN:
            row["retracted"], row["judge"] = RETRACTED_HUMAN[n]
        if n in NO_BLEU:
            row["bleu2"] = None
        truth[item] = row
    return truth


def _build_store(path) -> dict[str, dict]:
    """A store with a planting of ``base`` ("planted:p-qa", configured as qa-e3) and both models'
    probe scores, answers, labels and rule scores; returns {model: truth}."""
    rng = np.random.default_rng(28)
    truth = {MODELS["planted"]: _truth(rng, 0.4), MODELS["base"]: _truth(rng, 0.0)}
    configured = [{"name": "base", "provider": "local", "model": "base.gguf"},
                  {"name": "qa-e3", "provider": "local", "model": "planted:p-qa"}]
    with Store(path, create=True) as store:
        with store.transaction():
            store.append("items", [{"item_id": i, "title": "T", "subset": "official",
                                    "question": f"Q {i}?", "reference": "R"} for i in ITEMS])
            store.append("runs", [{"run_id": "r1", "kind": "probe",
                                   "config": json.dumps({"models": configured})}])
            for model, rows in truth.items():
                _write_model(store, model, rows)
        record_planting(store, _planting())
    return truth


def _write_model(store: Store, model: str, rows: dict[str, dict]) -> None:
    answered = {item: row for item, row in rows.items()
                if ITEMS.index(item) not in NEVER_ANSWERED}
    store.append("probe_scores", [
        {"probe": probe, "params_sha256": "p", "item_id": item, "model": model,
         "metric": metric, "value": row[metric], "created_at": utc_now()}
        for probe, metric in PROBE_MEASURES for item, row in answered.items()])
    for n, (older, newer) in RESCORED.items():  # a later run under other parameters wins
        for params, value in (("a", older), ("b", newer)):
            store.append("probe_scores", [{"probe": "ts-guess", "params_sha256": params,
                                           "item_id": ITEMS[n], "model": model,
                                           "metric": "exact_match", "value": value,
                                           "created_at": utc_now()}])
        rows[ITEMS[n]]["exact_match"] = newer
    store.append("answers", [{"run_id": "r1", "item_id": item, "model": model,
                              "answer_raw": row["answer"], "answer": row["answer"],
                              "created_at": utc_now()} for item, row in answered.items()])
    _write_labels(store, model, rows)
    store.append("scores", [{"item_id": item, "model": model, "metric": metric,
                             "value": row[metric], "created_at": utc_now()}
                            for item, row in rows.items() for metric in ("contains", "exact", "bleu2")
                            if row[metric] is not None])


def _write_labels(store: Store, model: str, rows: dict[str, dict]) -> None:
    labels = [{"item_id": item, "model": model, "rater": rater, "label": row[key],
               "created_at": utc_now()}
              for item, row in rows.items() for rater, key in (("human", "human"), (JUDGE, "judge"),
                                                                ("human", "retracted"))
              if row[key] is not None]
    store.append("labels", labels)
    store.append("labels", [{"item_id": item, "model": model, "rater": "human",
                             "label": row["retracted"], "retracted": True, "created_at": utc_now()}
                            for item, row in rows.items() if row["retracted"] is not None])


def _planting() -> dict:
    return {"name": "planted:p-qa", "base_name": "base", "base_model": "base.gguf",
            "planted_items": PLANTED, "format": "qa", "share": 2 / 3, "epochs": 3,
            "learning_rate": 1e-4, "batch_size": 4, "max_length": 256, "seed": 0,
            "device": "cpu", "loss_per_epoch": [2.0, 1.5, 1.0], "weights_sha256": "cd" * 32,
            "versions": {"torch": "x"}, "wall_s": 1.0, "created_at": utc_now()}


# -- the independent computation --------------------------------------------------------------------

def _values(truth: dict[str, dict], metric: str) -> dict[str, float]:
    """item -> the value the section should read: the model's answered items only, a stored NULL
    or missing label left out; "right" is the human's label where there is one, else the judge's."""
    values = {}
    for item, row in truth.items():
        if row["answer"] is None:  # never answered: no probe score, not a cell of the study
            continue
        if metric == "right":
            label = row["human"] if row["human"] is not None else row["judge"]
            value = None if label is None else float(label == "right")
        else:
            value = row[metric]
        if value is not None:
            values[item] = value
    return values


def _expected(values: dict[str, float]) -> dict[str, float]:
    planted = [v for item, v in values.items() if item in PLANTED]
    others = [v for item, v in values.items() if item not in PLANTED]
    truth = [item in PLANTED for item in values]
    fpr, tpr, _ = roc_curve(truth, list(values.values()), drop_intermediate=False)
    return {"planted_n": len(planted), "unplanted_n": len(others),
            "planted_mean": float(np.mean(planted)), "unplanted_mean": float(np.mean(others)),
            "auc": roc_auc_score(truth, list(values.values())),
            "tpr_at_5_fpr": max(t for f, t in zip(fpr, tpr) if f <= MAX_FPR),
            "mannwhitney_p": mannwhitneyu(planted, others, alternative="two-sided").pvalue}


@pytest.fixture(scope="module")
def store_rows(tmp_path_factory):
    path = tmp_path_factory.mktemp("rows") / "s.duckdb"
    truth = _build_store(path)
    with Store(path, read_only=True) as store:
        part = build(store)
    return truth, part


CASES = [(role, source, metric) for role in MODELS
         for source, metric in PROBE_MEASURES + [("density", m) for m in DENSITY]]


@pytest.mark.parametrize(("role", "source", "metric"), CASES)
def test_each_row_equals_an_independent_computation(store_rows, role, source, metric):
    truth, part = store_rows
    model = MODELS[role]
    [row] = [r for r in part["rows"] if (r["model"], r["source"], r["metric"]) == (model, source, metric)]
    expected = _expected(_values(truth[model], metric))
    assert {key: row[key] for key in expected} == pytest.approx(expected)
    assert (row["role"], row["planting"], row["measure"]) == (role, "planted:p-qa",
                                                              MEASURES[(source, metric)])
    assert row["auc_ci_low"] <= row["auc"] <= row["auc_ci_high"]


def test_the_rows_are_these_measures_on_both_models(store_rows):
    _, part = store_rows
    found = {(r["model"], r["source"], r["metric"]) for r in part["rows"]}
    assert found == {(MODELS[role], source, metric) for role, source, metric in CASES}
    assert all((source, metric) in READINGS for _, source, metric in CASES)


def test_the_gaps_are_left_out_as_documented(store_rows):
    """Never answered: neither scored nor a cell; NULL: not a score; no label: no "right"; a
    retracted human label: the judge's counts; a rescore under other parameters: the latest."""
    truth, part = store_rows
    rows = {(r["source"], r["metric"]): r for r in part["rows"] if r["model"] == MODELS["planted"]}
    answered = len(ITEMS) - len(NEVER_ANSWERED)
    counts = {measure: row["planted_n"] + row["unplanted_n"] for measure, row in rows.items()}
    assert counts == {("ts-guess", "exact_match"): answered - len(NULL_SCORE) - 1,
                      ("guided", "rouge_l_diff"): answered - len(NULL_SCORE),
                      ("density", "right"): answered - len(NO_LABEL),
                      ("density", "contains"): answered, ("density", "exact"): answered,
                      ("density", "bleu2"): answered - len(NO_BLEU)}
    right = rows[("density", "right")]
    judges = {item: float(row["judge"] == "right") for item, row in truth[MODELS["planted"]].items()
              if row["answer"] is not None and row["judge"] is not None}
    judged_only = _expected(judges)  # what the row would say if the human's labels were ignored
    assert right["planted_mean"] != pytest.approx(judged_only["planted_mean"])
    assert right["unplanted_mean"] != pytest.approx(judged_only["unplanted_mean"])


def test_the_section_shows_the_rows(store_rows):
    _, part = store_rows
    [table] = section(Report(validation=part)).tables
    shown = {(row[0], row[3]) for row in table.rows}
    assert shown == {(MODELS[role], MEASURES[(source, metric)]) for role, source, metric in CASES}
