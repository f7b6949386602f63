"""BLEU-2 as the seed paper defines it: equal to NLTK on every answer of two or more tokens, batched.

Definition (DESIGN.md, Metrics): NFC-normalise, lower-case, tokens are ``\\w+`` runs; clipped 1- and
2-gram precision against the one reference, weights (0.5, 0.5), geometric mean, the standard
brevity penalty, and Chen & Cherry method-4 smoothing (k = 5) as NLTK 3.10 implements it. The
paper's rules where NLTK differs or has nothing to say:

* a blank (whitespace-only) answer is ``None`` (missing data, not a genuine zero); so is a blank
  reference (such a cell is flagged, never guessed);
* zero clipped unigram matches, including an answer with no word characters at all, is 0.0;
* a one-token answer is 0.0: its bigram precision is 0 and method 4 cannot smooth it
  (ln 1 = 0). NLTK instead drops that precision and returns the brevity penalty; ``bleu2_nltk``
  keeps NLTK's behaviour for comparison.

Speed: a batch is tokenised in one pass over all its distinct texts (a reference shared by every
model's answer is tokenised once), n-gram matches of all pairs are counted by numpy with one sort
per n-gram order, and the final formula, which depends only on four small integers per pair, is
evaluated once per distinct quadruple with the very ``math`` calls NLTK makes, in NLTK's order. So
the floats are identical bit for bit (numpy's own log/exp may differ from libm by an ulp and are
never used here). ``scripts/bench_bleu.py`` measures the speed against NLTK called per pair.
"""

from __future__ import annotations

import functools
import math
import re
import sys
import unicodedata
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from harness.text import is_blank

__all__ = [
    "tokenize", "bleu2", "bleu2_many", "bleu2_nltk", "bleu2_nltk_many",
    "BLEU2_PARAMS", "bleu2_nltk_params",
]

_WORD = re.compile(r"\w+")
_NOT_WORD = re.compile(r"\W")
_SEPARATOR = "\x00"  # not a word character, a starter, neither cased nor case-ignorable
_METHOD4_K = 5  # SmoothingFunction(k=5), NLTK's default

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


def tokenize(text: str) -> list[str]:
    """The paper's tokens of one text (the definition; the batched path must agree with it)."""
    return _WORD.findall(unicodedata.normalize("NFC", text).lower())


def bleu2(answer: str | None, reference: str | None) -> float | None:
    """BLEU-2 of one answer (hypothesis) against its reference."""
    return bleu2_many([(answer, reference)])[0]


def bleu2_many(pairs: Iterable[Pair]) -> list[float | None]:
    """BLEU-2 of many (answer, reference) pairs in one vectorised pass."""
    pairs = list(pairs)
    if not pairs:
        return []
    texts, hyp, ref = _index_texts(pairs)
    counts = _PairCounts.of(texts, hyp, ref)
    values = counts.scores()
    blank = np.fromiter((not t.strip() for t in texts), dtype=bool, count=len(texts))
    values[blank[hyp] | blank[ref]] = np.nan
    return [None if v != v else v for v in values.tolist()]  # NaN marks "not scorable"


def _index_texts(pairs: Sequence[Pair]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct texts, and for each pair the index of its answer and of its reference among them.

    A reference shared by every model's answer to an item is tokenised and counted once."""
    flat = np.asarray([a or "" for a, _ in pairs] + [r or "" for _, r in pairs], dtype=object)
    codes, texts = pd.factorize(flat)
    return texts, codes[: len(pairs)].astype(np.int64), codes[len(pairs):].astype(np.int64)


class _PairCounts:
    """Per pair: clipped 1- and 2-gram matches (m1, m2), answer and reference lengths (c, r)."""

    def __init__(self, m1: np.ndarray, m2: np.ndarray, c: np.ndarray, r: np.ndarray) -> None:
        self.m1, self.m2, self.c, self.r = m1, m2, c, r

    @classmethod
    def of(cls, texts: Sequence[str], hyp: np.ndarray, ref: np.ndarray) -> "_PairCounts":
        token_ids, owner = _tokenize_together(texts)
        lengths = np.bincount(owner, minlength=len(texts))
        first = np.concatenate(([0], np.cumsum(lengths)))  # tokens of text t: first[t]:first[t+1]
        unigrams = _Ngrams(token_ids, first, lengths)
        bigrams = _Ngrams(_bigram_ids(token_ids), first, np.maximum(lengths - 1, 0))
        return cls(unigrams.clipped_matches(hyp, ref), bigrams.clipped_matches(hyp, ref),
                   lengths[hyp], lengths[ref])

    def scores(self) -> np.ndarray:
        """BLEU-2 per pair: NLTK's arithmetic evaluated once per distinct (m1, m2, c, r)."""
        codes, distinct = _distinct_rows(np.stack([self.m1, self.m2, self.c, self.r], axis=1))
        values = np.array([_bleu2_from_counts(*row) for row in distinct.tolist()], dtype=float)
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


def _tokenize_together(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids (equal ids for equal tokens) and the owning text's index, for all texts at once.

    One NFC + lower over the NUL-joined texts (NUL is a starter that is neither cased nor
    case-ignorable, so it stops composition and the final-sigma rule exactly as a string
    boundary does). Word characters are found by table lookup on the code points; everything
    else becomes a space, so ``str.split`` yields exactly the ``\\w+`` runs, in order.
    """
    joined = _SEPARATOR.join(texts)
    if joined.count(_SEPARATOR) != len(texts) - 1:  # a text holding NUL itself: blank it first
        joined = _SEPARATOR.join(t.replace(_SEPARATOR, " ") for t in texts)
    folded = unicodedata.normalize("NFC", joined).lower()
    code_points = np.frombuffer(folded.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    is_word = _word_characters()[code_points]
    spaced = np.where(is_word, code_points, np.uint32(ord(" ")))
    words = spaced.tobytes().decode("utf-32-le").split()
    starts = np.flatnonzero(is_word & ~np.concatenate(([False], is_word[:-1])))
    owner = np.searchsorted(np.flatnonzero(code_points == 0), starts)
    token_ids = pd.factorize(np.asarray(words, dtype=object))[0]
    return token_ids.astype(np.int64), owner.astype(np.int64)


@functools.cache
def _word_characters() -> np.ndarray:
    """Boolean table over all code points: does ``re``'s ``\\w`` match it? (``re`` is asked.)"""
    code_points = np.arange(sys.maxunicode + 1, dtype=np.uint32).tobytes()
    every = code_points.decode("utf-32-le", "surrogatepass")
    words = _NOT_WORD.sub("", every).encode("utf-32-le")
    table = np.zeros(sys.maxunicode + 1, dtype=bool)
    table[np.frombuffer(words, dtype=np.uint32)] = True
    return table


def _bigram_ids(token_ids: np.ndarray) -> np.ndarray:
    """Dense id of the bigram starting at each token (meaningless at a text's last token, which
    no text's bigram range includes)."""
    if len(token_ids) < 2:
        return np.zeros(len(token_ids), dtype=np.int64)
    vocabulary = int(token_ids.max()) + 1
    _, dense = np.unique(token_ids[:-1] * vocabulary + token_ids[1:], return_inverse=True)
    return np.append(dense.reshape(-1), 0)


class _Ngrams:
    """The n-grams of every text: ids[first[t] : first[t] + count[t]] are text t's, in order."""

    def __init__(self, ids: np.ndarray, first: np.ndarray, count: np.ndarray) -> None:
        self.ids, self.first, self.count = ids, first, count
        self.stride = int(ids.max()) + 1 if len(ids) else 1

    def clipped_matches(self, hyp: np.ndarray, ref: np.ndarray) -> np.ndarray:
        """Per pair: the sum over n-grams g of min(count of g in answer, count in reference).

        Every n-gram occurrence of both sides of every pair becomes one integer
        ``(pair, g, side)``; after one sort each (pair, g) is a run whose side-0 part is the
        reference's count and whose side-1 part is the answer's count."""
        keys = np.sort(np.concatenate([self._keys(ref, side=0), self._keys(hyp, side=1)]))
        if len(keys) == 0:
            return np.zeros(len(hyp), dtype=np.int64)
        run = keys >> 1
        starts = np.flatnonzero(np.concatenate(([True], run[1:] != run[:-1])))
        in_reference = np.add.reduceat((keys & 1) == 0, starts)
        size = np.diff(np.append(starts, len(keys)))
        clipped = np.minimum(in_reference, size - in_reference)
        return np.bincount(run[starts] // self.stride, weights=clipped,
                           minlength=len(hyp)).astype(np.int64)

    def _keys(self, texts: np.ndarray, side: int) -> np.ndarray:
        """``((pair * stride) + n-gram id) * 2 + side`` for every n-gram of each pair's text."""
        count = self.count[texts]
        pair = np.repeat(np.arange(len(texts), dtype=np.int64), count)
        offset = np.arange(len(pair)) - np.repeat(np.cumsum(count) - count, count)
        position = np.repeat(self.first[texts], count) + offset
        return (pair * self.stride + self.ids[position]) * 2 + side


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
