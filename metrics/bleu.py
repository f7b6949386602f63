"""BLEU-2 as the seed paper defines it: equal to NLTK on every answer of two or more tokens, batched.

Design notes: ARCHITECTURE.md, BLEU-2.
"""

from __future__ import annotations

import functools
import math
import re
import sys
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from contam.harness.text import is_blank

__all__ = [
    "tokenize", "bleu2", "bleu2_many", "bleu2_nltk", "bleu2_nltk_many",
    "BLEU2_PARAMS", "bleu2_nltk_params", "bleu2_scorer", "bleu2_nltk_scorer",
]

_WORD = re.compile(r"\w+")
_NOT_WORD = re.compile(r"\W")
_SEPARATOR = "\x00"  # not a word character, a starter, neither cased nor case-ignorable
_METHOD4_K = 5  # SmoothingFunction(k=5), NLTK's default
_CHUNK = 50_000  # pairs per vectorised pass: bounds the per-character arrays to ~100 MB

# What `contam score` stores as `scores.params` for metric `bleu2`; a change here re-scores.
BLEU2_PARAMS = {
    "implementation": "contam.metrics.bleu",
    "version": 1,
    "tokens": "NFC, lower, \\w+",
    "max_n": 2,
    "weights": [0.5, 0.5],
    "smoothing": "chen-cherry-method4 k=5 (nltk 3.10 arithmetic)",
    "one_token_answer": 0.0,
    "zero_unigram_matches": 0.0,
}

Pair = tuple[str | None, str | None]


def bleu2_scorer() -> tuple:
    """(score_many, params): what the metric registry's ``bleu2`` entry names."""
    return bleu2_many, BLEU2_PARAMS


def tokenize(text: str) -> list[str]:
    """The paper's tokens of one text (the definition; the batched path must agree with it)."""
    return _WORD.findall(unicodedata.normalize("NFC", text).lower())


def bleu2(answer: str | None, reference: str | None) -> float | None:
    """BLEU-2 of one answer (hypothesis) against its reference."""
    return bleu2_many([(answer, reference)])[0]


def bleu2_many(pairs: Iterable[Pair]) -> list[float | None]:
    """BLEU-2 of many (answer, reference) pairs, vectorised."""
    pairs = list(pairs)
    values: list[float | None] = []
    for start in range(0, len(pairs), _CHUNK):
        values += _bleu2_chunk(pairs[start:start + _CHUNK])
    return values


def _bleu2_chunk(pairs: Sequence[Pair]) -> list[float | None]:
    batch = _Batch.of(pairs)
    counts = _PairCounts.of(batch)
    values: list[float | None] = counts.scores().tolist()
    for pair in batch.blank_pairs(counts.c, counts.reference_lengths):
        values[pair] = None  # missing data, not a genuine zero
    return values


@dataclass
class _Batch:
    """Text ``p`` is pair ``p``'s answer; each distinct reference follows once (a reference shared
    by every model's answer to an item is tokenised and counted once)."""

    answers: list[str]
    references: list[str]
    reference_of: np.ndarray  # pair -> index into references

    @classmethod
    def of(cls, pairs: Sequence[Pair]) -> "_Batch":
        index: dict[str, int] = {}
        reference_of = [index.setdefault(r or "", len(index)) for _, r in pairs]
        return cls([a or "" for a, _ in pairs], list(index),
                   np.fromiter(reference_of, dtype=np.int64, count=len(pairs)))

    @property
    def texts(self) -> list[str]:
        return self.answers + self.references

    def blank_pairs(self, answer_lengths: np.ndarray, reference_lengths: np.ndarray) -> list[int]:
        """Pairs with a blank answer or reference. Only a text without tokens can be blank, so
        ``str.strip`` (``is_blank``'s definition) runs on those few alone."""
        blank = np.zeros(len(self.answers), dtype=bool)
        for pair in np.flatnonzero(answer_lengths == 0).tolist():
            blank[pair] = is_blank(self.answers[pair])
        blank_reference = np.zeros(len(self.references), dtype=bool)
        for reference in np.flatnonzero(reference_lengths == 0).tolist():
            blank_reference[reference] = is_blank(self.references[reference])
        return np.flatnonzero(blank | blank_reference[self.reference_of]).tolist()


class _PairCounts:
    """Per pair: clipped 1- and 2-gram matches (m1, m2), answer and reference lengths (c, r)."""

    def __init__(self, m1: np.ndarray, m2: np.ndarray, c: np.ndarray, r: np.ndarray,
                 reference_lengths: np.ndarray) -> None:
        self.m1, self.m2, self.c, self.r = m1, m2, c, r
        self.reference_lengths = reference_lengths  # per distinct reference

    @classmethod
    def of(cls, batch: _Batch) -> "_PairCounts":
        token_ids, owner = _tokenize_together(batch.texts)
        lengths = np.bincount(owner, minlength=len(batch.answers) + len(batch.references))
        answer_lengths, reference_lengths = np.split(lengths, [len(batch.answers)])
        unigrams = _Grams(token_ids, owner, stride=int(token_ids.max(initial=0)) + 1)
        bigrams = unigrams.bigrams()
        return cls(unigrams.clipped_matches(batch.reference_of),
                   bigrams.clipped_matches(batch.reference_of),
                   answer_lengths, reference_lengths[batch.reference_of], reference_lengths)

    def scores(self) -> np.ndarray:
        """BLEU-2 per pair: NLTK's arithmetic evaluated once per distinct (m1, m2, c, r)."""
        codes, distinct = _distinct_rows(np.stack([self.m1, self.m2, self.c, self.r], axis=1))
        values = np.fromiter(map(_bleu2_from_counts, *distinct.T.tolist()), dtype=float,
                             count=len(distinct))
        return values[codes]


def _distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of each row among the distinct rows, the distinct rows) of a small-int matrix."""
    base = int(rows.max()) + 1
    if base ** rows.shape[1] >= 2**63:  # too wide to pack into one int64 key
        distinct, codes = np.unique(rows, axis=0, return_inverse=True)
        return codes.reshape(-1), distinct
    place = base ** np.arange(rows.shape[1] - 1, -1, -1, dtype=np.int64)
    distinct_keys, codes = np.unique(rows @ place, return_inverse=True)
    return codes, distinct_keys[:, None] // place % base


# -- counting clipped n-gram matches of all pairs at once -------------------------------------

@dataclass
class _Grams:
    """The n-grams of every text of a batch, text after text: ``ids[i]`` (0 <= id < stride) is
    the i-th n-gram, ``owner[i]`` the index of its text (non-decreasing)."""

    ids: np.ndarray
    owner: np.ndarray
    stride: int

    def bigrams(self) -> "_Grams":
        """Bigram ids ``first * stride + second``, from consecutive tokens of the same text."""
        same_text = self.owner[1:] == self.owner[:-1]
        ids = self.ids[:-1][same_text] * self.stride + self.ids[1:][same_text]
        stride = self.stride * self.stride
        texts = int(self.owner.max(initial=0)) + 1
        if texts * stride * 2 >= 2**63:  # clipped_matches' keys would overflow: renumber densely
            ids, distinct = pd.factorize(ids)
            stride = max(len(distinct), 1)
        return _Grams(ids, self.owner[:-1][same_text], stride)

    def clipped_matches(self, reference_of: np.ndarray) -> np.ndarray:
        """Per pair: the sum over n-grams g of min(count of g in answer, count in reference).

        Every n-gram occurrence of both sides of every pair becomes one integer
        ``(pair * stride + g) * 2 + side`` (side 0: reference, 1: answer); after one sort each
        (pair, g) is a run of the reference's occurrences followed by the answer's."""
        pairs = len(reference_of)
        split = int(np.searchsorted(self.owner, pairs))  # answers' n-grams come first
        answer_keys = (self.owner[:split] * self.stride + self.ids[:split]) * 2 + 1
        keys = np.concatenate([self._reference_keys(split, reference_of), answer_keys])
        if pairs * self.stride * 2 <= 2**32:
            keys = keys.astype(np.uint32)  # sorts twice as fast
        return _sum_of_run_minima(np.sort(keys), self.stride, pairs)

    def _reference_keys(self, split: int, reference_of: np.ndarray) -> np.ndarray:
        """Side-0 keys: each pair's copy of its reference's n-grams."""
        pairs = len(reference_of)
        per_reference = np.bincount(self.owner[split:] - pairs,
                                    minlength=int(reference_of.max(initial=-1)) + 1)
        first = split + np.cumsum(per_reference) - per_reference
        count = per_reference[reference_of]
        pair = np.repeat(np.arange(pairs, dtype=np.int64), count)
        offset = np.arange(len(pair)) - np.repeat(np.cumsum(count) - count, count)
        return (pair * self.stride + self.ids[np.repeat(first[reference_of], count) + offset]) * 2


def _sum_of_run_minima(keys: np.ndarray, stride: int, pairs: int) -> np.ndarray:
    """Sorted ``(pair * stride + g) * 2 + side`` keys -> per pair, the sum over g of
    min(occurrences on side 0, occurrences on side 1).

    Equal keys form groups; a (pair, g) seen on both sides is a side-0 group immediately followed
    by a side-1 group of the same ``key >> 1``."""
    if len(keys) == 0:
        return np.zeros(pairs, dtype=np.int64)
    group_starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    sizes = np.diff(group_starts, append=len(keys))
    run = keys[group_starts] >> 1
    both_sides = run[1:] == run[:-1]
    clipped = np.minimum(sizes[:-1], sizes[1:])[both_sides]
    return np.bincount(run[:-1][both_sides] // stride, weights=clipped,
                       minlength=pairs).astype(np.int64)


# -- tokenising many texts without making a string per token ------------------------------------

_FIXED = 256  # word characters below U+0100 have fixed digits (there are 134, so they fit a byte)
_OTHER_WORD = 255  # digit-table mark of any other word character, numbered per batch


def _tokenize_together(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids (small, non-negative, equal exactly for equal tokens) and each token's text
    index, for all tokens of all texts in order.

    Equals ``tokenize`` on each text: one NFC over the NUL-joined texts (NUL is a starter that
    is neither cased nor case-ignorable, so it stops composition and the final-sigma rule
    exactly as a string boundary does), then lower case and ``\\w`` by table lookup."""
    code_points = _normal_code_points(texts)
    separators = np.flatnonzero(code_points == 0)
    if len(separators) != len(texts) + 1:  # a text holding NUL itself: blank those NULs first
        return _tokenize_together([t.replace(_SEPARATOR, " ") for t in texts])
    digits = _digits(code_points)
    is_word = digits != 0
    bounds = np.flatnonzero(is_word[1:] != is_word[:-1]) + 1  # the text is NUL at both ends
    starts, ends = bounds[0::2], bounds[1::2]
    return _token_ids(code_points, digits, starts, ends), _owners(separators, starts)


def _normal_code_points(texts: Sequence[str]) -> np.ndarray:
    """Code points of NUL + the NUL-joined texts + NUL, NFC-normalised; lower-cased already where
    ``str.lower`` has to do it (lower-casing is idempotent, so the tables apply either way)."""
    normal = unicodedata.normalize("NFC", _SEPARATOR.join(["", *texts, ""]))
    if "\u03a3" in normal or "\u0130" in normal:  # Σ's lower case depends on its neighbours,
        normal = normal.lower()                     # İ's is two characters: no table can do them
    return _code_points(normal)


def _code_points(text: str) -> np.ndarray:
    """The code points of a text; one byte each where they all fit (a memory copy, and every
    per-character array after it is four times smaller)."""
    try:
        return np.frombuffer(text.encode("latin-1"), dtype=np.uint8)
    except UnicodeEncodeError:
        return _utf32(text)


def _utf32(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _owners(separators: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The text index of each token, from the positions of the NULs around texts."""
    tokens_before = np.searchsorted(starts, separators)
    return np.repeat(np.arange(len(tokens_before) - 1), np.diff(tokens_before))


def _digits(code_points: np.ndarray) -> np.ndarray:
    """Per code point 0 where its lower case is not a word character, else a nonzero digit that
    identifies its lower case within this batch; in the narrowest unsigned dtype that holds them."""
    digits = np.take(_digit_table(), code_points)
    if code_points.dtype == np.uint8:
        return digits  # no character beyond U+00FF, none lower-cased beyond it: all fixed
    other = digits == _OTHER_WORD
    if not other.any():
        return digits
    alphabet, rank = np.unique(np.take(_lower_table(), code_points[other]), return_inverse=True)
    fixed = _fixed_digit_count()
    if fixed + len(alphabet) >= _OTHER_WORD:
        digits = digits.astype(np.uint16 if fixed + len(alphabet) < 2**16 else np.uint32)
    digits[other] = fixed + 1 + rank
    return digits


def _token_ids(code_points: np.ndarray, digits: np.ndarray, starts: np.ndarray,
               ends: np.ndarray) -> np.ndarray:
    """Small non-negative token ids, equal exactly for equal tokens.

    A token's digits, read as little-endian 64-bit words, are its exact code (digits are
    nonzero, so the zero bytes past its end also encode its length). A token of several words
    is renumbered word by word, each round into ids above all ids so far, so that tokens that
    stopped at an earlier word keep ids apart. Tokens over ``_MAX_WORDS`` words use strings."""
    words = _Words(digits, starts, ends)
    ids = pd.factorize(words.word(0))[0]
    for j in range(1, min(words.most, _MAX_WORDS)):
        longer = np.flatnonzero(words.count > j)
        pair = ids[longer] * len(ids) + pd.factorize(words.word(j, longer))[0]
        ids[longer] = ids.max() + 1 + pd.factorize(pair)[0]
    long = np.flatnonzero(words.count > _MAX_WORDS)
    if len(long):
        ids[long] = ids.max() + 1 + _string_ids(code_points, starts[long], ends[long])
    return ids.astype(np.int64, copy=False)


class _Words:
    """The tokens' digits as 64-bit words: ``word(j)`` holds bytes 8j to 8j + 7 of each token."""

    def __init__(self, digits: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
        self.first_byte = starts * digits.itemsize
        self.byte_length = (ends - starts) * digits.itemsize
        self.count = (self.byte_length + 7) >> 3
        self.most = int(self.count.max(initial=0))
        padded = np.concatenate([digits.view(np.uint8), np.zeros(8, dtype=np.uint8)])
        # a uint64 starting at every byte (numpy reads unaligned arrays correctly anywhere)
        self.at_byte = np.ndarray((digits.nbytes,), dtype="<u8", buffer=padded, strides=(1,))

    def word(self, j: int, tokens: np.ndarray | slice = slice(None)) -> np.ndarray:
        left = np.minimum(self.byte_length[tokens] - 8 * j, 8)
        return self.at_byte[self.first_byte[tokens] + 8 * j] & _BYTE_MASKS[left]


_MAX_WORDS = 4  # longer tokens (over 32 bytes of digits) are numbered by their strings
_BYTE_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)


def _string_ids(code_points: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Dense ids of the tokens at [starts, ends) by their text: the slow path for long tokens."""
    text = np.take(_lower_table(), code_points).tobytes().decode("utf-32-le", "surrogatepass")
    seen: dict[str, int] = {}
    return np.fromiter((seen.setdefault(text[s:e], len(seen))
                        for s, e in zip(starts.tolist(), ends.tolist())),
                       dtype=np.int64, count=len(starts))


@functools.cache
def _lower_table() -> np.ndarray:
    """``str.lower`` of every code point on its own, as a lookup table. Exact for every text
    without Σ and İ (the only characters whose lower case depends on context or is longer)."""
    every = _every_code_point().replace("\u0130", _SEPARATOR)
    table = _utf32(every.lower()).copy()
    table[0x130] = 0x130  # never looked up: batches holding İ take str.lower
    return table


@functools.cache
def _digit_table() -> np.ndarray:
    """Over all code points, by the character's lower case: 0 for a non-word character, a fixed
    digit 1..134 for a word character below U+0100, ``_OTHER_WORD`` for any other."""
    word = _word_characters()
    by_lower_case = np.where(word, _OTHER_WORD, 0).astype(np.uint8)
    by_lower_case[np.flatnonzero(word[:_FIXED])] = np.arange(1, _fixed_digit_count() + 1)
    return by_lower_case[_lower_table()]


@functools.cache
def _fixed_digit_count() -> int:
    count = int(_word_characters()[:_FIXED].sum())
    assert count < _OTHER_WORD  # they fit a byte beside the mark
    assert (_lower_table()[:_FIXED] < _FIXED).all()  # `_digits` skips one-byte texts on this
    return count


@functools.cache
def _word_characters() -> np.ndarray:
    """Boolean table over all code points: does ``re``'s ``\\w`` match it? (``re`` is asked.)"""
    words = _NOT_WORD.sub("", _every_code_point())
    table = np.zeros(sys.maxunicode + 1, dtype=bool)
    table[_utf32(words)] = True
    return table


def _every_code_point() -> str:
    return np.arange(sys.maxunicode + 1, dtype=np.uint32).tobytes().decode(
        "utf-32-le", "surrogatepass")


def _bleu2_from_counts(m1: int, m2: int, c: int, r: int) -> float:
    """NLTK 3.10's ``sentence_bleu(weights=(0.5, 0.5), smoothing_function=method4)``, float for
    float, given clipped matches m1, m2, answer length c and reference length r.

    NLTK keeps precisions as unnormalised ``Fraction(m, max(1, len-n+1))`` and ``math.log``
    turns them into floats by int/int true division (correctly rounded, like ``m / d`` here).
    Method 4 replaces a zero bigram precision by ``1 / (2**1 * k / ln c) / (c - 1)``. The two
    weighted logs are summed by ``math.fsum``, which for two terms equals one rounded ``+``.
    """
    if m1 == 0 or c < 2:
        return 0.0  # the paper's zero rules (NLTK agrees on m1 == 0)
    p1 = m1 / c
    p2 = m2 / (c - 1) if m2 else 1 / (2**1 * _METHOD4_K / math.log(c)) / (c - 1)
    brevity = 1 if c > r else math.exp(1 - r / c)
    return brevity * math.exp(0.5 * math.log(p1) + 0.5 * math.log(p2))


# -- NLTK's own behaviour, for cross-checks and the optional `bleu2_nltk` metric ----------------

def bleu2_nltk_params() -> dict:
    from nltk import __version__ as nltk_version

    return {"implementation": "nltk.translate.bleu_score.sentence_bleu", "nltk": nltk_version,
            "tokens": "NFC, lower, \\w+", "weights": [0.5, 0.5], "smoothing": "method4"}


def bleu2_nltk(answer: str | None, reference: str | None) -> float | None:
    """NLTK's sentence_bleu on the paper's tokens (one-token answers get NLTK's brevity penalty)."""
    return bleu2_nltk_many([(answer, reference)])[0]


def bleu2_nltk_many(pairs: Iterable[Pair]) -> list[float | None]:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    method4 = SmoothingFunction().method4
    return [None if is_blank(a) or is_blank(r) else
            float(sentence_bleu([tokenize(r)], tokenize(a), weights=(0.5, 0.5),
                                smoothing_function=method4))
            for a, r in pairs]


def bleu2_nltk_scorer() -> tuple:
    """(score_many, params): what the metric registry's ``bleu2_nltk`` entry names."""
    return bleu2_nltk_many, bleu2_nltk_params()
