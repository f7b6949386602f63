"""Shards of a BERTScore pass: the unit of work of the single-process pass and of the Ray pass.

The pairs still to score are cut into shards of about ``DEFAULT_SHARD_PAIRS``, grouped so that
every pair of one reference lands in the same shard (its reference is embedded once). Both passes
score exactly these shards with :func:`score_shard`, in one process or on Ray actors, so both
give the same numbers, value for value: an encoder's batches (and so its float rounding) depend
on which texts are scored together, and here they are the same.

:func:`score_shard` and :func:`make_scorer` are the one boundary to the scorer: a Ray actor holds
what ``make_scorer`` built and calls ``score_shard`` on every shard it is sent.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from contam.metrics.bertscore import Baseline, BertScore, EncoderChoice

__all__ = ["DEFAULT_SHARD_PAIRS", "Pair", "reference_shards", "make_scorer", "score_shard",
           "LocalShards"]

DEFAULT_SHARD_PAIRS = 4096

Pair = tuple[str, str]  # (answer, reference), both non-blank


def reference_shards(pairs: Sequence[Pair], size: int = DEFAULT_SHARD_PAIRS) -> list[list[int]]:
    """Indices of ``pairs`` in shards, by reference: a shard takes whole references until it
    holds at least ``size`` pairs (a reference with more pairs than that is a shard of its own)."""
    by_reference: dict[str, list[int]] = {}
    for index, (_, reference) in enumerate(pairs):
        by_reference.setdefault(reference, []).append(index)
    shards, current = [], []
    for reference in sorted(by_reference):
        current.extend(by_reference[reference])
        if len(current) >= size:
            shards.append(current)
            current = []
    return shards + [current] if current else shards


def make_scorer(encoder: EncoderChoice, device: str | None, precision: str | None = None,
                token_budget: int | None = None, idf_documents: Sequence[str] | None = None,
                remote: str | None = None) -> BertScore:
    """The scorer a pass (or a Ray actor) holds for all its shards; ``idf_documents``: weigh
    tokens by idf over these references (None: idf off); ``remote``: see :class:`BertScore`."""
    return BertScore(encoder, device=device, precision=precision, token_budget=token_budget,
                     idf_documents=idf_documents, remote=remote)


def score_shard(scorer: BertScore, pairs: Sequence[Pair], baseline: Baseline | None) -> list[float]:
    """F1 of every pair of one shard (rescaled when a baseline is given)."""
    return scorer.f1(pairs, baseline)


class LocalShards:
    """The shards scored one after another in this process (the single-process pass)."""

    def __init__(self, scorer: BertScore) -> None:
        self.scorer = scorer

    def start(self) -> None:
        """Load the model now (to fail before anything is written)."""
        self.scorer.load()

    def baseline_from_pairs(self, pairs: Sequence[Pair]) -> Baseline:
        return self.scorer.baseline_from_pairs(pairs)

    def scored(self, pairs: Sequence[Pair], shards: Sequence[list[int]],
               baseline: Baseline | None) -> Iterator[tuple[list[int], list[float]]]:
        """(shard, its F1 values) for every shard, in order."""
        for shard in shards:
            yield shard, score_shard(self.scorer, [pairs[i] for i in shard], baseline)

    def close(self) -> None:
        pass
