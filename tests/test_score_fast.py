"""`contam score` answers at once where it has nothing to do: no answers, or
every cell already scored, never reach the BERTScore model; and roberta-large missing offline is
said before torch or transformers are imported. Checked by what is called and imported, not by
time (the times are in the README)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import contam.metrics.bertscore as bertscore
from contam.harness.jobs import score as score_job
from contam.harness.jobs.score import score_store
from contam.harness.store import Store, utc_now
from tests.test_score import add_answers, add_items

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "bert_score")

# Runs `contam score`'s function in a fresh interpreter; prints its summaries and which of the
# heavy packages it imported.
_CHILD = """
import json, sys
from contam.harness.jobs.score import score, ScoreOptions
summaries = score(store=sys.argv[1], options=ScoreOptions(metrics=sys.argv[2:]))
print(json.dumps({"lines": [s.line() for s in summaries], "errors": [s.error for s in summaries],
                  "imported": [m for m in %r if m in sys.modules]}))
""" % (HEAVY,)


def score_in_child(store: Path, *metrics: str, cache: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache),
           "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(store), *metrics], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture
def no_model_load(monkeypatch):
    """Any attempt to load an encoder fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("the BERTScore model was loaded")

    monkeypatch.setattr(bertscore, "load_encoder", refuse)
    monkeypatch.setattr(bertscore.BertScore, "load", refuse)


def test_a_store_without_answers_loads_no_model_nor_its_packages(store_path, tmp_path, no_model_load):
    with Store(store_path, create=True) as store:
        add_items(store)
        summaries = score_store(store, ("bleu2", "bertscore"))
    assert [s.line() for s in summaries] == [
        "bleu2: 0 scored (0 NULL), 0 already scored with the same params",
        "bertscore_f1: 0 scored (0 NULL), 0 already scored with the same params"]
    child = score_in_child(store_path, "bleu2", "bertscore", cache=tmp_path / "hub")
    assert child["imported"] == [] and child["errors"] == [None, None]


def test_roberta_large_missing_offline_is_said_before_torch_is_imported(store_path, tmp_path):
    with Store(store_path, create=True) as store:
        add_items(store)
        add_answers(store)
    child = score_in_child(store_path, "bleu2", "bertscore", cache=tmp_path / "empty-hub")
    assert child["imported"] == []
    assert child["errors"][0] is None and child["lines"][0].startswith("bleu2: 10 scored")
    assert "roberta-large is not in the local Hugging Face cache" in child["errors"][1]


def test_a_fully_scored_store_loads_no_model_nor_bert_score(store_path, tmp_path, no_model_load):
    """Every cell scored with exactly the params this pass would write: nothing is due."""
    scorer = bertscore.BertScore(bertscore.resolve_encoder())
    params = score_job._params_json(scorer.params(bertscore.shipped_baseline("roberta-large", 17)))
    with Store(store_path, create=True) as store:
        add_items(store)
        add_answers(store)
        keys = store.query("SELECT item_id, model FROM latest_answers")
        store.append("scores", [{"item_id": i, "model": m, "metric": "bertscore_f1", "value": 0.5,
                                 "params": params, "created_at": utc_now()} for i, m in keys])
        summary, = score_store(store, ("bertscore",))
    assert summary.line() == "bertscore_f1: 0 scored (0 NULL), 10 already scored with the same params"
    child = score_in_child(store_path, "bertscore", cache=tmp_path / "empty-hub")
    assert child["errors"] == [None] and "bert_score" not in child["imported"]
    assert child["lines"] == [summary.line()]


def test_another_encoder_s_scores_make_the_cells_due(store_path):
    """A cell scored by another encoder needs this one: its absence is said up front."""
    with Store(store_path, create=True) as store:
        add_items(store)
        add_answers(store)
        store.append("scores", [{"item_id": "i1", "model": model, "metric": "bertscore_f1",
                                 "value": 0.5, "params": json.dumps({"model": encoder}),
                                 "created_at": utc_now()}
                                for model, encoder in (("a", "other"), ("b", "roberta-large"))])
        encoder = bertscore.resolve_encoder()
        cells = {(c.item_id, c.model): c for c in score_job._read_cells(store)}
        assert score_job._surely_due(store, [cells["i1", "a"]], encoder)
        assert not score_job._surely_due(store, [cells["i1", "b"]], encoder)  # params decide
        assert score_job._surely_due(store, [cells["i3", "a"]], encoder)  # never scored


def test_the_default_layer_is_bert_score_s_own():
    from bert_score.utils import model2layers

    assert model2layers[bertscore.DEFAULT_MODEL] == bertscore.DEFAULT_LAYER
