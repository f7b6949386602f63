"""The batched BERTScore pass over many pairs: every distinct text tokenised and encoded once,
embeddings kept only while pairs still need them, matching batched on the device, results yielded
chunk by chunk so that a million pairs run in bounded memory.

Pairs are ordered by reference, then cut into chunks of ``chunk_pairs``. A chunk encodes the texts
it needs that are not resident yet, matches its pairs, and the texts no later chunk uses are dropped
when the next chunk starts. Raw (P, R, F) come out; rescaling is a separate step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from contam.metrics.bertscore_encoder import Embedded, Encoder, embed, tokenize
from contam.metrics.bertscore_match import MATCH_BUDGET, greedy_match

__all__ = ["score_pairs", "score_chunks", "DEFAULT_CHUNK_PAIRS"]

DEFAULT_CHUNK_PAIRS = {"cpu": 4096, "cuda": 32768}


def score_pairs(encoder: Encoder, candidates: Sequence[str], references: Sequence[str],
                chunk_pairs: int | None = None) -> np.ndarray:
    """Raw (P, R, F) per pair as a float32 (N, 3) array, in the order given."""
    out = np.zeros((len(candidates), 3), dtype=np.float32)
    for indices, values in score_chunks(encoder, candidates, references, chunk_pairs):
        out[indices] = values
    return out


def score_chunks(encoder: Encoder, candidates: Sequence[str], references: Sequence[str],
                 chunk_pairs: int | None = None,
                 on_encoded: Callable[[int], None] | None = None,
                 ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(pair indices, raw (P, R, F) of those pairs) chunk by chunk, in an order of our choosing.
    ``on_encoded(n)`` is told how many texts each chunk encoded."""
    if len(candidates) != len(references):
        raise ValueError("candidates and references differ in length")
    texts, cand_id, ref_id = _intern(candidates, references)
    order = np.lexsort((cand_id, ref_id))  # a reference's pairs together: it is encoded once
    size = chunk_pairs or DEFAULT_CHUNK_PAIRS[encoder.device.type]
    chunks = [order[i:i + size] for i in range(0, len(order), size)]
    last_use = _last_use(chunks, cand_id, ref_id, len(texts))
    resident = _Resident(encoder, texts)
    for number, chunk in enumerate(chunks):
        encoded = resident.prepare(np.unique(np.concatenate([cand_id[chunk], ref_id[chunk]])),
                                   keep=last_use >= number)
        if on_encoded:
            on_encoded(encoded)
        yield chunk, resident.match(cand_id[chunk], ref_id[chunk])


def _intern(candidates: Sequence[str], references: Sequence[str]):
    """Distinct texts, and each pair's two text numbers."""
    number: dict[str, int] = {}
    cand = np.fromiter((number.setdefault(t, len(number)) for t in candidates), dtype=np.int64,
                       count=len(candidates))
    ref = np.fromiter((number.setdefault(t, len(number)) for t in references), dtype=np.int64,
                      count=len(references))
    return list(number), cand, ref


def _last_use(chunks: list[np.ndarray], cand_id: np.ndarray, ref_id: np.ndarray,
              n_texts: int) -> np.ndarray:
    """The last chunk each text is used in."""
    last = np.full(n_texts, -1, dtype=np.int64)
    for number, chunk in enumerate(chunks):
        last[cand_id[chunk]] = number
        last[ref_id[chunk]] = number
    return last


class _Resident:
    """Embeddings of the texts the pairs still need, flat on the encoder's device."""

    def __init__(self, encoder: Encoder, texts: list[str]) -> None:
        import torch

        self.encoder, self.texts = encoder, texts
        self.offset = np.full(len(texts), -1, dtype=np.int64)  # -1: not resident
        self.length = np.zeros(len(texts), dtype=np.int64)
        self.vectors = torch.zeros((0, 0), device=encoder.device)
        self.weights = torch.zeros(0, device=encoder.device)

    def prepare(self, needed: np.ndarray, keep: np.ndarray) -> int:
        """Make every ``needed`` text resident, dropping those not in ``keep``; return how many
        texts had to be encoded."""
        missing = needed[self.offset[needed] < 0]
        kept = np.flatnonzero((self.offset >= 0) & keep)
        fresh = (embed(self.encoder, tokenize(self.encoder, [self.texts[i] for i in missing]))
                 if len(missing) else Embedded(self.vectors[:0], self.weights[:0], missing,
                                               missing))
        self._rebuild(kept, missing, fresh)
        return len(missing)

    def _rebuild(self, kept: np.ndarray, missing: np.ndarray, fresh: Embedded) -> None:
        import torch

        rows = _rows(self.offset[kept], self.length[kept])
        rows_t = torch.from_numpy(rows).to(self.encoder.device)
        old_vectors = self.vectors[rows_t] if len(rows) else fresh.vectors[:0]
        self.vectors = torch.cat([old_vectors, fresh.vectors])
        self.weights = torch.cat([self.weights[rows_t] if len(rows) else fresh.weights[:0],
                                  fresh.weights])
        self.offset[:] = -1
        kept_len = self.length[kept]
        self.offset[kept] = np.concatenate([[0], np.cumsum(kept_len)[:-1]]) if len(kept) else 0
        self.offset[missing] = fresh.offsets + len(rows)
        self.length[missing] = fresh.lengths

    def match(self, cand: np.ndarray, ref: np.ndarray) -> np.ndarray:
        budget = MATCH_BUDGET[self.encoder.device.type]
        return greedy_match(self.vectors, self.weights, self.offset[cand], self.length[cand],
                            self.offset[ref], self.length[ref], budget)


def _rows(offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Every row index of the given (offset, length) spans, concatenated."""
    if not len(offsets):
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(offsets - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return starts + np.arange(int(lengths.sum()))
