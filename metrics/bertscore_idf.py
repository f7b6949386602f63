"""bert-score's idf weights (``idf=True``): each token weighs its inverse document frequency over
a corpus of reference documents instead of 1.

bert-score's definition (``get_idf_dict``): with M documents and df(t) the number of documents
whose ``sent_encode`` ids contain t, idf(t) = log((M + 1) / (df(t) + 1)); a token no document holds
weighs log(M + 1); the ``[CLS]``/``[SEP]``-like ids weigh 0. P and R are then the idf-weighted
means of the best cosines, as with weights of 1. A text whose tokens all occur in every document
weighs 0 in total: its P or R is NaN and its F 0, as in bert-score.

contam's corpus is one document per item: the reference of every item with an answer (an item's
reference counts once however many models answered it). :func:`corpus_label` names that corpus
in ``scores.params``, so scores weighted by another corpus are never taken for these.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence

import numpy as np

from contam.metrics.bertscore_encoder import Encoder, tokenize

__all__ = ["idf_table", "with_idf", "corpus_label"]


def idf_table(encoder: Encoder, documents: Sequence[str]) -> np.ndarray:
    """float32 idf of every token id of the encoder's tokenizer over ``documents``."""
    frequency = np.zeros(len(encoder.tokenizer), dtype=np.int64)
    for ids in tokenize(encoder, list(documents)):
        frequency[np.unique(np.asarray(ids, dtype=np.int64))] += 1  # once per document
    table = np.log((len(documents) + 1) / (frequency + 1))  # df 0: log(M + 1), bert-score's default
    table[list(encoder.special_ids)] = 0.0
    return table.astype(np.float32)


def with_idf(encoder: Encoder, documents: Sequence[str]) -> Encoder:
    """The same loaded encoder, its tokens weighted by idf over ``documents``."""
    return dataclasses.replace(encoder, idf=idf_table(encoder, documents))


def corpus_label(documents: Sequence[str]) -> str:
    """``references:n=M:sha256=...`` of the documents, in the order given."""
    digest = hashlib.sha256()
    for document in documents:
        encoded = document.encode("utf-8")
        digest.update(len(encoded).to_bytes(8, "little") + encoded)  # unambiguous boundaries
    return f"references:n={len(documents)}:sha256={digest.hexdigest()[:16]}"
