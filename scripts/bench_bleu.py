"""Throughput of `contam.metrics.bleu.bleu2_many` against NLTK's `sentence_bleu` called once per pair.

The pairs are shaped like a store: items with short references (median 3 tokens, as in the seed
paper), each answered by several models with answers of varied length that share some words with
the reference, some punctuation, some accented words, occasional one-token and blank answers.
Both sides start from the same strings and use the same tokeniser; NLTK is only timed on pairs it
can score (non-blank), and the values are checked to be equal on every answer of >= 2 tokens.

    .venv/bin/python scripts/bench_bleu.py [--pairs 20000] [--models 4] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import time

from contam.metrics.bleu import bleu2_many, tokenize

WORDS = ("the a of to in badge gym leader pewter city cerulean brock misty flash rock type "
         "pokémon pokédex tm34 bide surf cut strength route cave island professor oak elm "
         "rival silph co team rocket lavender tower ghost marowak boulderbadge cascade thunder "
         "rainbow soul marsh volcano earth level 25 36 50 evolves into using stone trade held "
         "item gives player after defeating found north south east west floor basement").split()
PUNCT = ("", "", "", ".", ",", "!", "'s", " -", " (", ")")


def _text(rng: random.Random, n_words: int, vocabulary: list[str]) -> str:
    words = []
    for _ in range(n_words):
        word = rng.choice(vocabulary)
        words.append(word.capitalize() if rng.random() < 0.3 else word)
        words[-1] += rng.choice(PUNCT)
    return " ".join(words)


def store_shaped_pairs(n_pairs: int, n_models: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    while len(pairs) < n_pairs:
        reference = _text(rng, max(1, round(rng.lognormvariate(1.1, 0.5))), list(WORDS))
        reference_words = tokenize(reference)
        for _ in range(n_models):
            # answers reuse reference words half of the time: clipping and matches both happen
            pool = reference_words * 3 + list(WORDS) if reference_words else list(WORDS)
            length = rng.choice([0, 1, 1, 2, 3, 4, 6, 8, 12, 20, 30]) if rng.random() < 0.99 else 0
            pairs.append((_text(rng, length, pool) if length else "", reference))
    return pairs[:n_pairs]


def time_ours(pairs: list[tuple[str, str]]) -> tuple[float, list]:
    start = time.perf_counter()
    values = bleu2_many(pairs)
    return time.perf_counter() - start, values


def time_nltk(pairs: list[tuple[str, str]]) -> tuple[float, list]:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    method4 = SmoothingFunction().method4
    start = time.perf_counter()
    values = [sentence_bleu([tokenize(r)], tokenize(a), weights=(0.5, 0.5),
                            smoothing_function=method4) if a.strip() else None
              for a, r in pairs]
    return time.perf_counter() - start, values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    pairs = store_shaped_pairs(args.pairs, args.models, args.seed)
    time_ours(pairs[:100])  # first-call imports and allocations are not throughput
    ours_s, ours = min((time_ours(pairs) for _ in range(3)), key=lambda r: r[0])
    # best of 3 on both sides: on a shared machine a single slow NLTK run would flatter the ratio
    nltk_s, theirs = min((time_nltk(pairs) for _ in range(3)), key=lambda r: r[0])
    compared = [(o, t) for (a, _), o, t in zip(pairs, ours, theirs) if len(tokenize(a)) >= 2]
    mismatches = sum(o != t for o, t in compared)
    print(f"pairs: {len(pairs)} ({len({r for _, r in pairs})} distinct references, "
          f"{args.models} answers each)")
    print(f"contam bleu2_many: {ours_s:.4f} s  {len(pairs) / ours_s:,.0f} pairs/s (best of 3)")
    print(f"nltk sentence_bleu per pair: {nltk_s:.4f} s  {len(pairs) / nltk_s:,.0f} pairs/s "
          "(best of 3)")
    print(f"ratio: {nltk_s / ours_s:.1f}x")
    print(f"bit-identical on {len(compared) - mismatches}/{len(compared)} answers of >= 2 tokens")


if __name__ == "__main__":
    main()
