"""BERTScore's encoder, loaded once: bert-score's tokenisation and truncated model, run in
length-sorted batches under a token budget on one or several devices.

* The model is bert-score's own ``get_model(model_type, layer)`` (the encoder cut at that layer),
  so the embeddings are the ones bert-score compares.
* Tokenisation is bert-score's ``sent_encode`` (text stripped, special tokens added, truncation to
  ``model_max_length``, ``add_prefix_space`` for GPT-2/RoBERTa tokenizers, an empty text is just the
  special tokens), done as one batched tokenizer call per group of texts. Every call is checked on a
  sample of its texts against ``sent_encode``; on the first difference the encoder falls back to
  ``sent_encode`` one text at a time for the rest of its life.
* :func:`embed` returns unit-length float32 token embeddings, one flat ``(tokens, dim)`` tensor on
  the encoder's first device, with the weight of each token (0 for ``[CLS]``/``[SEP]``-like ids, 1
  otherwise: bert-score's weights with idf off; the token's idf where the encoder carries an idf
  table, :mod:`contam.metrics.bertscore_idf`).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain

import numpy as np

from contam.harness.errors import UserError

__all__ = ["PRECISIONS", "Encoder", "load_encoder", "resolve_devices", "default_precision",
           "tokenize", "embed", "token_batches", "Embedded"]

PRECISIONS = ("fp32", "tf32", "bf16")
CHECK_SAMPLE = 64  # texts of every tokenizer call compared with bert-score's sent_encode
DEFAULT_TOKEN_BUDGET = {"cpu": 2048, "cuda": 65536}  # CPU: 8192 ran ~20% slower than 1024-4096


@dataclass(eq=False)
class Encoder:
    """A loaded encoder: what the pass needs to turn texts into token embeddings."""

    name: str
    layer: int
    tokenizer: object
    models: list  # one replica per device, the first on the matching device
    devices: list  # torch.device per replica
    precision: str
    token_budget: int
    special_ids: frozenset[int]
    prefix_space: bool  # bert-score's add_prefix_space for GPT-2 / RoBERTa tokenizers
    batch_tokenizer_ok: bool = True  # False after a batched call disagreed with sent_encode
    idf: np.ndarray | None = None  # float32 weight per token id (contam.metrics.bertscore_idf); None: 1

    @property
    def device(self):
        """Where embeddings live and matching runs."""
        return self.devices[0]


@dataclass
class Embedded:
    """Unit-length token embeddings of several texts, flat: text i is rows
    ``offsets[i] : offsets[i] + lengths[i]`` of ``vectors``; ``weights`` per row."""

    vectors: object  # torch (tokens, dim) float32
    weights: object  # torch (tokens,) float32
    offsets: np.ndarray
    lengths: np.ndarray


# -- devices and precision --------------------------------------------------------------------

def resolve_devices(device: str | None = None) -> list[str]:
    """``cuda`` means every visible GPU, ``cuda:1`` that one, ``cpu`` the CPU; default: every GPU
    when there is one, else the CPU."""
    import torch

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise UserError(f"--device {device}: not a torch device") from exc
    if parsed.type != "cuda":
        return [str(parsed)]
    if not torch.cuda.is_available():
        raise UserError(f"--device {device}: CUDA is not available here")
    if parsed.index is None:
        return [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if parsed.index >= torch.cuda.device_count():
        raise UserError(f"--device {device}: only {torch.cuda.device_count()} GPUs are visible")
    return [str(parsed)]


def default_precision(devices: Sequence[str]) -> str:
    """tf32 on CUDA (within 1e-4 of fp32, several times faster), fp32 elsewhere."""
    return "tf32" if devices[0].startswith("cuda") else "fp32"


def check_precision(precision: str, devices: Sequence[str]) -> str:
    if precision not in PRECISIONS:
        raise UserError(f"--precision {precision}: choose from {', '.join(PRECISIONS)}")
    if precision == "tf32" and not devices[0].startswith("cuda"):
        raise UserError("--precision tf32 is a CUDA mode; on the CPU use fp32 or bf16")
    return precision


@contextlib.contextmanager
def matmul_precision(precision: str) -> Iterator[None]:
    """fp32 matmuls exact ("highest") unless tf32 is asked for; restored afterwards."""
    import torch

    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


# -- loading ----------------------------------------------------------------------------------

def load_encoder(model_type: str, layer: int, device: str | None = None,
                 precision: str | None = None, token_budget: int | None = None,
                 name: str | None = None) -> Encoder:
    """bert-score's tokenizer and model cut at ``layer``, one replica per device.
    ``model_type`` is a hub name or a local directory (nothing here decides about the network)."""
    import torch
    from bert_score.utils import get_model, get_tokenizer
    from transformers import GPT2Tokenizer, RobertaTokenizer

    devices = resolve_devices(device)
    precision = check_precision(precision or default_precision(devices), devices)
    tokenizer = get_tokenizer(model_type, use_fast=False)  # what bert-score's scorer uses
    model = _truncated_model(get_model, model_type, layer)
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    models = [(model if i == 0 else copy.deepcopy(model)).to(device=d, dtype=dtype)
              for i, d in enumerate(devices)]
    kind = "cuda" if devices[0].startswith("cuda") else "cpu"
    return Encoder(
        name=name or model_type, layer=layer, tokenizer=tokenizer, models=models,
        devices=[torch.device(d) for d in devices], precision=precision,
        token_budget=token_budget or DEFAULT_TOKEN_BUDGET[kind],
        special_ids=frozenset({tokenizer.sep_token_id, tokenizer.cls_token_id} - {None}),
        prefix_space=isinstance(tokenizer, (GPT2Tokenizer, RobertaTokenizer)))


def _truncated_model(get_model, model_type: str, layer: int):
    try:
        return get_model(model_type, layer)
    except AssertionError as exc:  # bert-score checks the layer range with assert
        raise UserError(f"BERTScore model {model_type}: {exc}") from exc


# -- tokenising -------------------------------------------------------------------------------

def tokenize(encoder: Encoder, texts: Sequence[str]) -> list[list[int]]:
    """bert-score's ids for each text, from one batched call checked against ``sent_encode``."""
    from bert_score.utils import sent_encode

    if not encoder.batch_tokenizer_ok:
        return [sent_encode(encoder.tokenizer, t) if t.strip() else _batched_ids(encoder, [t])[0]
                for t in texts]
    ids = _batched_ids(encoder, texts)
    step = max(1, len(texts) // CHECK_SAMPLE)
    sample = [i for i in range(0, len(texts), step) if texts[i].strip()]  # see _batched_ids
    if all(ids[i] == sent_encode(encoder.tokenizer, texts[i]) for i in sample):
        return ids
    encoder.batch_tokenizer_ok = False  # one difference: trust only sent_encode from now on
    return tokenize(encoder, texts)


def _batched_ids(encoder: Encoder, texts: Sequence[str]) -> list[list[int]]:
    tokenizer = encoder.tokenizer
    stripped = [t.strip() for t in texts]
    present = [t for t in stripped if t]
    extra = {"add_prefix_space": True} if encoder.prefix_space else {}
    encoded = iter(tokenizer(present, add_special_tokens=True, truncation=True,
                             max_length=tokenizer.model_max_length, **extra)["input_ids"]
                   if present else [])
    empty = tokenizer("", add_special_tokens=True)["input_ids"]  # bert-score: the specials alone
    return [next(encoded) if t else list(empty) for t in stripped]


# -- encoding ---------------------------------------------------------------------------------

def token_batches(lengths: Sequence[int], budget: int) -> list[np.ndarray]:
    """Indices grouped longest first so that rows x longest length <= ``budget`` (a text longer
    than the budget goes alone)."""
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    batches, start = [], 0
    while start < len(order):
        longest = int(lengths[order[start]])
        rows = max(1, budget // max(longest, 1))
        batches.append(order[start:start + rows])
        start += rows
    return batches


def embed(encoder: Encoder, token_ids: Sequence[Sequence[int]]) -> Embedded:
    """Unit-length float32 embeddings of every token of every text, on ``encoder.device``."""
    import torch

    lengths = np.fromiter((len(t) for t in token_ids), dtype=np.int64, count=len(token_ids))
    batches = token_batches(lengths, encoder.token_budget)
    with matmul_precision(encoder.precision), torch.inference_mode():
        outputs = _run_batches(encoder, token_ids, batches)
        order = np.concatenate(batches) if batches else np.zeros(0, dtype=np.int64)
        vectors = torch.cat(outputs) if outputs else torch.zeros((0, 1), device=encoder.device)
        vectors = vectors / vectors.norm(dim=-1, keepdim=True)
    offsets = _offsets_in_input_order(lengths, order)
    weights = _weights(encoder, token_ids, order)
    return Embedded(vectors, weights, offsets, lengths)


def _run_batches(encoder: Encoder, token_ids, batches) -> list:
    """Each batch's real-token embeddings (flat), batches spread round-robin over the devices."""
    if len(encoder.models) == 1:
        return [_encode_batch(encoder, 0, token_ids, b) for b in batches]
    with ThreadPoolExecutor(len(encoder.models)) as pool:
        futures = [pool.submit(_encode_batch, encoder, i % len(encoder.models), token_ids, b)
                   for i, b in enumerate(batches)]
        return [f.result() for f in futures]


def _encode_batch(encoder: Encoder, replica: int, token_ids, batch: np.ndarray):
    """Pad with the tokenizer's pad id (as bert-score does), encode, keep the real tokens: a flat
    ``(tokens, dim)`` float32 tensor, text after text, on the encoder's first device."""
    import torch

    device = encoder.devices[replica]
    ids, real = _padded(token_ids, batch, encoder.tokenizer.pad_token_id)
    with torch.inference_mode():  # here too: a replica's worker thread has autograd on
        out = encoder.models[replica](ids.to(device), attention_mask=real.to(device))[0]
        return out[real.to(device, dtype=bool)].to(device=encoder.device, dtype=torch.float32)


def _padded(token_ids, batch: np.ndarray, pad_id: int):
    """(ids, mask) of the batch's texts as padded ``(rows, longest)`` int64 tensors, built in one
    numpy assignment (per-row tensor copies cost ~3% of a CPU pass)."""
    import torch

    lengths = np.fromiter((len(token_ids[i]) for i in batch), dtype=np.int64, count=len(batch))
    real = np.arange(int(lengths.max())) < lengths[:, None]
    ids = np.full(real.shape, pad_id, dtype=np.int64)
    ids[real] = np.fromiter(chain.from_iterable(token_ids[i] for i in batch), dtype=np.int64,
                            count=int(lengths.sum()))  # row-major: text after text
    return torch.from_numpy(ids), torch.from_numpy(real.astype(np.int64))


def _offsets_in_input_order(lengths: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Row offset of each text in the flat tensor, whose texts come in ``order``."""
    starts = np.zeros(len(order), dtype=np.int64)
    if len(order):
        starts[1:] = np.cumsum(lengths[order])[:-1]
    offsets = np.empty_like(starts)
    offsets[order] = starts
    return offsets


def _weights(encoder: Encoder, token_ids, order: np.ndarray):
    """Each token's weight in flat order: its idf where the encoder has an idf table, else 1;
    0 on the special ids either way (bert-score's weights)."""
    import torch

    flat = np.fromiter((t for i in order for t in token_ids[i]), dtype=np.int64)
    if encoder.idf is not None:
        return torch.from_numpy(encoder.idf[flat]).to(encoder.device)  # specials are 0 in it
    special = np.isin(flat, np.fromiter(encoder.special_ids, dtype=np.int64))
    return torch.from_numpy((~special).astype(np.float32)).to(encoder.device)
