"""Greedy cosine matching of many (candidate, reference) pairs at once, on the embeddings' device.

bert-score's definitions: every candidate token takes its most similar reference token (precision)
and every reference token its most similar candidate token (recall); each is averaged with the token
weights (0 on the special tokens, 1 elsewhere); F = 2PR / (P + R), NaN -> 0; a text of only its two
special tokens gets P = R = 0 (bert-score's "empty sentence" rule, applied after F as it does).

bert-score multiplies the similarities by the padding mask, so a padded position offers a cosine of
0: a token whose every real cosine is negative takes 0 whenever its partner is shorter than the
longest text of bert-score's matching batch (every pair but the longest of each 64). Here that 0
floor applies to every pair, so a value never depends on which pairs shared its batch; it equals
bert-score's except for a pair that was the longest of its bert-score batch *and* has such a token.
"""

from __future__ import annotations

import numpy as np

__all__ = ["greedy_match", "match_batches"]

MATCH_BUDGET = {"cpu": 1 << 23, "cuda": 1 << 28}  # float32 elements per matching batch


def match_batches(cand_len: np.ndarray, ref_len: np.ndarray, dim: int,
                  budget: int) -> list[np.ndarray]:
    """Pair indices grouped by similar lengths so that each batch's gathered embeddings and
    similarity matrix stay under ``budget`` float32 elements."""
    order = np.lexsort((ref_len, cand_len))
    batches, start = [], 0
    while start < len(order):
        end = start + 1
        lc, lr = int(cand_len[order[start]]), int(ref_len[order[start]])
        while end < len(order):
            lc2, lr2 = max(lc, int(cand_len[order[end]])), max(lr, int(ref_len[order[end]]))
            if (end - start + 1) * (lc2 * lr2 + (lc2 + lr2) * dim) > budget:
                break
            lc, lr, end = lc2, lr2, end + 1
        batches.append(order[start:end])
        start = end
    return batches


def greedy_match(vectors, weights, cand_off: np.ndarray, cand_len: np.ndarray,
                 ref_off: np.ndarray, ref_len: np.ndarray, budget: int) -> np.ndarray:
    """(P, R, F) per pair, float32 (N, 3). Text i of a pair is rows ``off : off + len`` of the
    unit-length ``vectors`` (tokens, dim), with ``weights`` per row."""
    import torch

    out = np.zeros((len(cand_off), 3), dtype=np.float32)
    with torch.inference_mode():
        for batch in match_batches(cand_len, ref_len, vectors.shape[1], budget):
            out[batch] = _match_batch(vectors, weights, cand_off[batch], cand_len[batch],
                                      ref_off[batch], ref_len[batch]).cpu().numpy()
    return out


def _gather(vectors, weights, offsets: np.ndarray, lengths: np.ndarray):
    """Padded (B, L, dim) embeddings, (B, L) weights and the (B, L) real-token mask."""
    import torch

    device = vectors.device
    positions = torch.arange(int(lengths.max()), device=device)
    lengths_t = torch.from_numpy(lengths).to(device)
    real = positions[None, :] < lengths_t[:, None]
    rows = torch.where(real, torch.from_numpy(offsets).to(device)[:, None] + positions, 0)
    return vectors[rows], weights[rows] * real, real


def _match_batch(vectors, weights, cand_off, cand_len, ref_off, ref_len):
    import torch

    cand, cand_w, cand_real = _gather(vectors, weights, cand_off, cand_len)
    ref, ref_w, ref_real = _gather(vectors, weights, ref_off, ref_len)
    sim = torch.bmm(cand, ref.transpose(1, 2))
    sim.masked_fill_(~(cand_real[:, :, None] & ref_real[:, None, :]), 0.0)  # bert-score's floor
    precision = _weighted_mean(sim.max(dim=2).values.clamp_min_(0.0), cand_w)
    recall = _weighted_mean(sim.max(dim=1).values.clamp_min_(0.0), ref_w)
    f1 = torch.nan_to_num(2 * precision * recall / (precision + recall), nan=0.0)
    empty = torch.from_numpy((cand_len == 2) | (ref_len == 2)).to(sim.device)
    precision, recall = precision.masked_fill(empty, 0.0), recall.masked_fill(empty, 0.0)
    return torch.stack([precision, recall, f1], dim=-1)


def _weighted_mean(best, weight):
    return (best * weight).sum(dim=1) / weight.sum(dim=1)
