"""BLEU-2: bit-identical to NLTK on answers of two or more tokens, and the paper's own rules."""

from __future__ import annotations

import math
import random
import sys
from collections import Counter

import numpy as np
import pytest
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

from contam.metrics import bleu as bleu_module
from contam.metrics.bleu import (_Batch, _digits, _Grams, _lower_table, _normal_code_points,
                          _tokenize_together, bleu2, bleu2_many, bleu2_nltk, bleu2_nltk_many,
                          tokenize)

METHOD4 = SmoothingFunction().method4
# Few distinct words, so repeats, clipping and zero bigram matches are all common. Tokens of
# 8, 12 and 13 letters sharing their first 8, of 20 and of 45 letters exercise the batched
# tokeniser's one-word, several-word and string paths; Greek without Σ its per-batch digits.
VOCABULARY = ["the", "The", "badge", "Badge", "gym", "rock", "type", "Pokémon", "Poke\u0301mon",
              "flash", "tm34", "bide", "city", "a", "of", "ΚΑΛΗ", "straße", "_x", "42",
              "boulderb", "boulderbadge", "BoulderBadges", "internationalisation",
              "pneumonoultramicroscopicsilicovolcanoconiosis"]
# Σ (whose lower case depends on context) and İ (two characters in lower case) make a batch
# take str.lower instead of the lookup table.
CONTEXT_CASED = ["ΟΔΟΣ", "ΣΑΣ", "οδος", "Σ", "İstanbul", "I\u0307stanbul", "istanbul", "ıstanbul"]
GLUE = [" ", " ", " ", ", ", ". ", "-", " (", ") ", "! ", " — ", "'s "]


def nltk_reference(answer: str, reference: str) -> float:
    return sentence_bleu([tokenize(reference)], tokenize(answer), weights=(0.5, 0.5),
                         smoothing_function=METHOD4)


def random_text(rng: random.Random, n_words: int, vocabulary=VOCABULARY) -> str:
    return "".join(rng.choice(vocabulary) + rng.choice(GLUE) for _ in range(n_words)).strip()


def random_pairs(n: int, seed: int = 20260101, vocabulary=VOCABULARY) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    while len(pairs) < n:
        answer = random_text(rng, rng.randint(2, 25), vocabulary)
        reference = random_text(rng, rng.randint(1, 12), vocabulary)
        if len(tokenize(answer)) >= 2:
            pairs.append((answer, reference))
    return pairs


def assert_equals_nltk(pairs):
    ours = bleu2_many(pairs)
    theirs = [nltk_reference(a, r) for a, r in pairs]
    assert [(p, o, t) for p, o, t in zip(pairs, ours, theirs) if not o == t] == []
    assert all(type(v) is float for v in ours)
    return ours


def test_equals_nltk_bit_for_bit_on_12000_random_pairs():
    pairs = random_pairs(12_000)
    assert _normal_code_points([a for a, _ in pairs]).dtype == np.uint32  # Greek: not one byte
    ours = assert_equals_nltk(pairs)
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


def test_equals_nltk_where_every_character_fits_a_byte():
    pairs = random_pairs(3_000, seed=10, vocabulary=[w for w in VOCABULARY if w != "ΚΑΛΗ"])
    pairs = [(a.replace("—", "-"), r.replace("—", "-")) for a, r in pairs]  # U+2014 in GLUE
    assert _normal_code_points([t for pair in pairs for t in pair]).dtype == np.uint8
    assert_equals_nltk(pairs)


def test_equals_nltk_where_str_lower_does_the_casing():
    pairs = random_pairs(3_000, seed=11, vocabulary=VOCABULARY + CONTEXT_CASED)
    assert_equals_nltk(pairs)
    assert bleu2("ΟΔΟΣ ΣΑΣ", "οδος σας") == 1.0  # final sigma on both sides
    assert bleu2("ΟΔΟΣ ΣΑΣ", "οδοσ σασ") == 0.0
    assert bleu2("I\u0307stanbul city", "İstanbul city") == 1.0  # NFC composes İ first


def test_equals_nltk_with_an_alphabet_of_hundreds_of_letters():
    """Over 121 letters beyond U+00FF: two bytes a digit, four characters a word, and tokens
    of more than 16 characters numbered by their strings."""
    rng = random.Random(5)
    letters = [chr(0x4E00 + i) for i in range(400)]
    words = ["".join(rng.choices(letters[:30], k=rng.choice([1, 2, 4, 5, 8, 9, 17, 30])))
             for _ in range(40)]
    pairs = random_pairs(2_000, seed=6, vocabulary=words + [" ".join(letters)])
    assert _digits(_normal_code_points([a for a, _ in pairs])).dtype == np.uint16
    assert_equals_nltk(pairs)


def test_equals_nltk_with_a_large_vocabulary():
    """Thousands of distinct words: the sort keys of (pair, bigram) no longer fit 32 bits."""
    rng = random.Random(12)
    words = ["".join(rng.choices("abcdefghij", k=rng.randint(2, 7))) for _ in range(3_000)]
    pairs = random_pairs(1_500, seed=13, vocabulary=words)
    token_ids, _ = _tokenize_together([t for pair in pairs for t in pair])
    assert 1_500 * (int(token_ids.max()) + 1) ** 2 * 2 > 2**32
    assert_equals_nltk(pairs)


def test_bigram_ids_are_renumbered_where_keys_would_overflow():
    pairs = random_pairs(300, seed=14)
    batch = _Batch.of(pairs)
    token_ids, owner = _tokenize_together(batch.texts)
    compact = _Grams(token_ids, owner, stride=int(token_ids.max()) + 1).bigrams()
    spread = _Grams(token_ids, owner, stride=2**31).bigrams()  # 2 * texts * stride**2 > 2**63
    assert spread.stride == len(set(spread.ids.tolist())) == len(set(compact.ids.tolist()))
    assert np.array_equal(spread.clipped_matches(batch.reference_of),
                          compact.clipped_matches(batch.reference_of))


def test_duplicate_pairs_and_shared_references():
    base = random_pairs(300, seed=3)
    rng = random.Random(4)
    pairs = [rng.choice(base) for _ in range(3_000)]  # every pair many times over
    pairs += [(answer, base[0][1]) for answer, _ in base]  # one reference for 300 answers
    ours = assert_equals_nltk(pairs)
    by_pair = {}
    assert all(by_pair.setdefault(p, v) == v for p, v in zip(pairs, ours))


def test_chunks_give_the_values_of_one_pass(monkeypatch):
    pairs = random_pairs(200, seed=8) + [("", "x"), ("x", None), ("...", "x")]
    whole = bleu2_many(pairs)
    monkeypatch.setattr(bleu_module, "_CHUNK", 7)
    assert bleu2_many(pairs) == whole


def test_very_long_answers_and_one_token_references():
    rng = random.Random(9)
    long_answer = random_text(rng, 3_000)
    pairs = [(long_answer, "badge"), (long_answer, random_text(rng, 400)),
             (long_answer, long_answer), ("the badge", "badge"), ("badge badge badge", "Badge"),
             ("gym leader", "The")]
    ours = assert_equals_nltk(pairs)
    assert ours[2] == 1.0


def test_texts_without_tokens_in_a_batch():
    pairs = [("a b", "..."), ("...", "..."), ("\x00", "x"), ("x y", "\x00"), ("", "..."),
             ("\x1c", "x"), ("x y", " \n"), ("x y", "x y")]
    # NUL is not whitespace (not blank, no tokens: 0.0); U+001C is whitespace to str.strip
    assert bleu2_many(pairs) == [0.0, 0.0, 0.0, 0.0, None, None, None, 1.0]


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


AWKWARD = ["\u0301starts with a mark", "straße STRASSE ẞ", "x\x00y", "snake_case and 3½ Ⅻ ٣٤ ²",
           "emoji 🐉 dragon", "中文字 かな", "", "   ", "...", "lone \udc80 surrogate", "ﬁne",
           "ab\u0301\u0327c", "TM34, Bide.", "Kelvin \u212a Ångström \u212b", "ǅemal ǈ",
           "Ꭰ Cherokee", "Ა Mtavruli", "𐐀 Deseret", "µ ª º ÿ Ÿ", "ΚΑΛΗ", "\x00", "a\x00"]


@pytest.mark.parametrize("texts, code_point_dtype", [
    (AWKWARD, np.uint32), (AWKWARD + CONTEXT_CASED, np.uint32),
    (["ÿes", "ÀB", "µ ª º ² ¼", "Straße", "\x00"], np.uint8),  # every character below U+0100
    (["Ÿes ÿes", "ÀB"], np.uint32)])  # Ÿ lower-cases to ÿ: one fixed digit for both
def test_batched_tokeniser_equals_the_definition_on_awkward_text(texts, code_point_dtype):
    assert _normal_code_points(texts).dtype == code_point_dtype
    assert_tokenised_like_the_definition(texts)


@pytest.mark.parametrize("seed", range(6))
def test_batched_tokeniser_equals_the_definition_on_random_unicode(seed):
    rng = random.Random(seed)
    pool = ("aAbBzZ09_ ,.-!?\n\t\u00a0\u2003\x00ßÿµª²¼ÀÉ\u0301\u0327\u0307ΑαΚκΣσςİIıi\u212a"
            "\u212bǅẞᎠᲐ𐐀🐉中文\udc80٣Ⅻﬁ")
    texts = ["".join(rng.choices(pool, k=rng.randint(0, 40))) for _ in range(300)]
    if seed % 2:  # half the batches without Σ or İ, so that the lookup table does the casing
        texts = [t.replace("Σ", "s").replace("İ", "i").replace("I\u0307", "i") for t in texts]
    assert_tokenised_like_the_definition(texts)


def test_more_than_65535_distinct_letters_widen_the_digits_to_four_bytes():
    ranges = [(0x4E00, 0x9FFF), (0x20000, 0x2A6DF), (0xAC00, 0xD7A3)]
    letters = [chr(c) for first, last in ranges for c in range(first, last + 1)]
    assert len(letters) > 65_535
    rng = random.Random(1)
    texts = ["".join(letters[i:i + 3] + [" "]) for i in range(0, len(letters), 3)]
    texts = ["".join(rng.sample(texts, 200)) for _ in range(400)] + ["".join(texts)]
    assert _digits(_normal_code_points(texts)).dtype == np.uint32
    assert_tokenised_like_the_definition(texts)


def assert_tokenised_like_the_definition(texts):
    token_ids, owner = _tokenize_together(texts)
    flat = [t for text in texts for t in tokenize(text)]
    assert len(token_ids) == len(flat)
    assert owner.tolist() == [i for i, text in enumerate(texts) for _ in tokenize(text)]
    first_id = {}
    for token, token_id in zip(flat, token_ids.tolist()):
        assert first_id.setdefault(token, token_id) == token_id  # equal tokens, equal ids
    assert len(set(first_id.values())) == len(first_id)  # different tokens, different ids


def test_lower_table_is_str_lower_of_each_character_alone():
    table = _lower_table()
    expected = [c.lower() for c in map(chr, range(sys.maxunicode + 1))]
    mismatched = [hex(c) for c, low in enumerate(expected)
                  if len(low) != 1 or ord(low) != table[c]]
    assert mismatched == ["0x130"]  # İ: two characters, handed to str.lower with Σ
    assert np.array_equal(table[table], table)  # idempotent: applies to lowered text too


def test_many_keeps_order_and_duplicates():
    pairs = [("the badge", "the badge"), ("", "x"), ("the badge", "the badge"), ("a b", "c")]
    assert bleu2_many(pairs) == [1.0, None, 1.0, 0.0]
    assert bleu2_many([]) == []
    assert bleu2_nltk_many(pairs) == [1.0, None, 1.0, 0.0]
