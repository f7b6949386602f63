"""BLEU-2: bit-identical to NLTK on answers of two or more tokens, and the paper's own rules."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

from metrics.bleu import (_tokenize_together, bleu2, bleu2_many, bleu2_nltk, bleu2_nltk_many,
                          tokenize)

METHOD4 = SmoothingFunction().method4
# Few distinct words, so repeats, clipping and zero bigram matches are all common.
VOCABULARY = ["the", "The", "badge", "Badge", "gym", "rock", "type", "Pokémon", "Poke\u0301mon",
              "flash", "tm34", "bide", "city", "a", "of", "ΟΔΟΣ", "straße", "_x", "42"]
GLUE = [" ", " ", " ", ", ", ". ", "-", " (", ") ", "! ", " — ", "'s "]


def nltk_reference(answer: str, reference: str) -> float:
    return sentence_bleu([tokenize(reference)], tokenize(answer), weights=(0.5, 0.5),
                         smoothing_function=METHOD4)


def random_text(rng: random.Random, n_words: int) -> str:
    return "".join(rng.choice(VOCABULARY) + rng.choice(GLUE) for _ in range(n_words)).strip()


def random_pairs(n: int, seed: int = 20260101) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    while len(pairs) < n:
        answer = random_text(rng, rng.randint(2, 25))
        reference = random_text(rng, rng.randint(1, 12))
        if len(tokenize(answer)) >= 2:
            pairs.append((answer, reference))
    return pairs


def test_equals_nltk_bit_for_bit_on_12000_random_pairs():
    pairs = random_pairs(12_000)
    ours = bleu2_many(pairs)
    theirs = [nltk_reference(a, r) for a, r in pairs]
    mismatches = [(p, o, t) for p, o, t in zip(pairs, ours, theirs) if not o == t]
    assert mismatches == []
    assert all(type(v) is float for v in ours)
    # the sample exercises what could go wrong: clipping, smoothing, both brevity branches
    hyp = [Counter(tokenize(a)) for a, _ in pairs]
    ref = [Counter(tokenize(r)) for _, r in pairs]
    assert sum(any(h[w] > r[w] > 0 for w in h) for h, r in zip(hyp, ref)) > 1000  # clipped
    assert sum(0 < v < 1 and _no_bigram_match(a, r) for (a, r), v in zip(pairs, ours)) > 1000
    assert sum(sum(h.values()) > sum(r.values()) for h, r in zip(hyp, ref)) > 1000
    assert sum(sum(h.values()) < sum(r.values()) for h, r in zip(hyp, ref)) > 1000
    assert sum(v == 0.0 for v in ours) > 100  # zero unigram matches


def _no_bigram_match(answer: str, reference: str) -> bool:
    def bigrams(text):
        tokens = tokenize(text)
        return set(zip(tokens, tokens[1:]))
    return not bigrams(answer) & bigrams(reference)


def test_single_calls_agree_with_the_batch():
    pairs = random_pairs(50, seed=7)
    assert [bleu2(a, r) for a, r in pairs] == bleu2_many(pairs)


def test_hand_computed_values():
    # c = 3, r = 6: both precisions 1, brevity penalty exp(1 - 6/3)
    assert bleu2("the cat sat", "the cat sat on the mat") == math.exp(-1)
    # no bigram match, c = 2: method 4 gives p2 = ln(2) / (10 * (2 - 1))
    assert bleu2("cat the", "the cat") == pytest.approx(math.sqrt(math.log(2) / 10))
    assert bleu2("Flash Badge", "flash badge!") == 1.0


def test_one_token_answer_is_zero_where_nltk_returns_the_brevity_penalty():
    assert bleu2("Flash", "Flash") == 0.0
    assert bleu2("Brock", "Brock gives TM34") == 0.0
    assert bleu2_nltk("Flash", "Flash") == 1.0
    assert bleu2_nltk("Brock", "Brock gives TM34") == pytest.approx(math.exp(1 - 3))


def test_zero_unigram_matches_is_exactly_zero():
    assert bleu2("Cerulean City gym", "Vermilion harbour") == 0.0
    assert bleu2("red blue green", "yellow") == 0.0
    assert nltk_reference("red blue green", "yellow") == 0


@pytest.mark.parametrize("answer, reference", [("...", "Flash"), ("?!", "the badge"),
                                               ("— …", "Misty"), ("Flash", "...")])
def test_no_word_characters_is_zero_not_null(answer, reference):
    assert bleu2(answer, reference) == 0.0


@pytest.mark.parametrize("answer, reference", [("", "Flash"), ("   \n\t", "Flash"),
                                               (None, "Flash"), ("Flash", ""),
                                               ("Flash", "  "), ("Flash", None)])
def test_blank_answer_or_reference_is_null(answer, reference):
    assert bleu2(answer, reference) is None
    assert bleu2_nltk(answer, reference) is None


def test_decomposed_unicode_is_normalised_before_tokenising():
    assert tokenize("Poke\u0301dex") == ["pokédex"] == tokenize("Pokédex")
    assert bleu2("The Poke\u0301dex", "the Pokédex") == 1.0
    assert bleu2("Poke\u0301dex entry", "Pokédex entry") == bleu2("Pokédex entry", "Pokédex entry")


@pytest.mark.parametrize("answer, reference", [("Flash", "Flash."), ("Pokédex", "The Pokédex."),
                                               ("Rock", "Rock-type Pokémon."),
                                               ("Boulder Badge", "The BoulderBadge")])
def test_the_seed_papers_four_examples_score_zero(answer, reference):
    assert bleu2(answer, reference) == 0.0


def test_batched_tokeniser_equals_the_definition_on_awkward_text():
    texts = ["ΟΔΟΣ ΣΑΣ", "\u0301starts with a mark", "İstanbul", "straße STRASSE", "x\x00y",
             "snake_case and 3½ Ⅻ ٣٤", "emoji 🐉 dragon", "中文字 かな", "", "   ", "...",
             "lone \udc80 surrogate", "ﬁne", "Σ", "ab\u0301\u0327c", "TM34, Bide."]
    token_ids, owner = _tokenize_together(texts)
    flat = [t for text in texts for t in tokenize(text)]
    assert owner.tolist() == [i for i, text in enumerate(texts) for _ in tokenize(text)]
    first_id = {}
    for token, token_id in zip(flat, token_ids.tolist()):
        assert first_id.setdefault(token, token_id) == token_id  # equal tokens, equal ids
    assert len(set(first_id.values())) == len(first_id)  # different tokens, different ids


def test_many_keeps_order_and_duplicates():
    pairs = [("the badge", "the badge"), ("", "x"), ("the badge", "the badge"), ("a b", "c")]
    assert bleu2_many(pairs) == [1.0, None, 1.0, 0.0]
    assert bleu2_many([]) == []
    assert bleu2_nltk_many(pairs) == [1.0, None, 1.0, 0.0]
