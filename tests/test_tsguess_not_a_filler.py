"""ts-guess on a model that answers instead of filling the mask: its section and the Probe
validation say "not applicable on this model: it does not fill masks" rather than showing 0% as
if the model were clean, and the model leaves the contrast tests and the Holm family."""

from __future__ import annotations

import json

from contam.harness.report.model import Report
from contam.harness.report.parts.probe_tsguess import build, section, tidy
from contam.harness.report.parts.validation import build as build_validation
from contam.harness.report.parts.validation import section as validation_section
from contam.harness.store import Store, utc_now
from contam.harness.store.plantings import record_planting

ITEMS = [f"i{n:02d}" for n in range(12)]
ANSWER = "river quellan flows into the shallow lake marrowby"
NOT_A_FILLER = "not applicable on this model: it does not fill masks"


def _store(path):
    """ts-guess scores of "answers" (sentences, no match) and "fills" (one word, some match),
    and a planting whose planted model is "answers" and whose base is "fills"."""
    with Store(path, create=True) as store:
        with store.transaction():
            _scores(store)
        record_planting(store, {
            "name": "planted:qa", "base_name": "fills", "base_model": "base.gguf",
            "planted_items": ITEMS[::2], "format": "qa", "share": 0.5, "epochs": 3,
            "learning_rate": 1e-4, "batch_size": 4, "max_length": 256, "seed": 7, "device": "cpu",
            "loss_per_epoch": [1.0] * 3, "weights_sha256": "ab" * 32, "versions": {},
            "wall_s": 1.0, "created_at": utc_now()})
    return path


def _scores(store) -> None:
    store.append("items", [{"item_id": i, "title": "T", "subset": ("official", "fan")[n % 2],
                            "question": f"Q{i}?", "reference": "R"} for n, i in enumerate(ITEMS)])
    store.append("probe_params", [{"params_sha256": "p", "probe": "ts-guess",
                                   "params": json.dumps({"rule": "rarest"}), "created_at": utc_now()}])
    store.append("probe_scores", [
        {"probe": "ts-guess", "params_sha256": "p", "item_id": item, "model": model,
         "metric": "exact_match", "value": value, "detail": json.dumps({"reply": reply}),
         "created_at": utc_now()}
        for n, item in enumerate(ITEMS)
        for model, value, reply in (("answers", 0.0, ANSWER),
                                    ("fills", float(n < 6), "empty" if n < 6 else "lake"))])
    store.append("runs", [{"run_id": "r", "kind": "probe", "config": json.dumps({"models": [
        {"name": "fills", "provider": "local", "model": "base.gguf"},
        {"name": "answers", "provider": "local", "model": "planted:qa"}]})}])


def test_the_section_says_the_probe_does_not_apply_to_a_model_that_answers(tmp_path):
    with Store(_store(tmp_path / "s.duckdb"), read_only=True) as store:
        part = build(store, ("official", "fan"))
    assert part["not_applicable"] == ["answers"]
    assert [t["model"] for t in part["tests"]] == ["fills"]  # no Fisher test of a 0% that means nothing
    shown = section(part, Report(contrast={"documented": "official", "undocumented": "fan"}))
    text = " ".join(shown.paragraphs)
    assert f"answers: {NOT_A_FILLER} (12 of 12 replies are longer than 3 words or not a word)" in text
    rates = {(row[0], row[1]): row[4] for row in shown.tables[0].rows}
    assert rates[("answers", "official")] == "not applicable" and rates[("fills", "official")] != "not applicable"
    assert tidy(part)["probe_tsguess_not_applicable"] == [
        {"model": "answers", "reason": NOT_A_FILLER, "fills": 0, "replies": 12, "fills_masks": False}]


def test_probe_validation_says_it_too_and_keeps_it_out_of_the_family(tmp_path):
    with Store(_store(tmp_path / "s.duckdb"), read_only=True) as store:
        part = build_validation(store)
    rows = {r["model"]: r for r in part["rows"] if r["source"] == "ts-guess"}
    assert rows["answers"]["not_applicable"] == NOT_A_FILLER
    assert rows["answers"]["auc"] != rows["answers"]["auc"] and rows["answers"]["family_size"] == 0
    assert rows["fills"]["not_applicable"] is None and rows["fills"]["family_size"] == 1
    shown = validation_section(Report(validation=part))
    assert f"ts-guess exact match on answers: {NOT_A_FILLER}." in shown.paragraphs
    [answers] = [row for row in shown.tables[0].rows if row[0] == "answers"]
    assert answers[5] == "not applicable"


def test_a_report_with_a_planting_counts_the_fills_once(tmp_path, monkeypatch):
    """The probes section and the Probe validation both say which model does not fill masks;
    the replies are read and counted once, for the probes section, and the validation reads that."""
    from contam.harness.report.analysis import build_report
    from contam.harness.report.parts import probe_tsguess

    path = _store(tmp_path / "s.duckdb")
    with Store(path) as store:
        store.append("answers", [{"run_id": "r", "item_id": i, "model": m, "answer": "A",
                                  "created_at": utc_now()} for i in ITEMS for m in ("fills", "answers")])
    counted = []
    real = probe_tsguess._fill_counts
    monkeypatch.setattr(probe_tsguess, "_fill_counts",
                        lambda *args: counted.append(args[1:]) or real(*args))
    with Store(path, read_only=True) as store:
        report = build_report(store)
    assert counted == [("p",)]
    assert report.probes["ts-guess"]["not_applicable"] == ["answers"]
    rows = {r["model"]: r for r in report.validation["rows"] if r["source"] == "ts-guess"}
    assert rows["answers"]["not_applicable"] == NOT_A_FILLER and rows["fills"]["not_applicable"] is None
