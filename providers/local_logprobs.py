"""The log-probabilities a local causal LM gives a text's tokens (the min-k probe), from one
forward pass over a batch of texts: blocking, for a worker thread (``LocalProvider.text_logprobs``
runs it there, with whatever other texts are waiting). The texts are padded on the right under an
attention mask, so each row's real tokens see exactly what they would alone (causal attention,
positions from 0); only the float rounding of the batched matrix products can differ.

The text is tokenised as the Min-K% and Min-K%++ reference code does (``tokenizer.encode(text)``:
the tokenizer's own special tokens, a BOS where the model's tokenizer adds one), with no chat
template. Position i's logits give the distribution of token i + 1, so every token but the first is
scored. Log-softmax is taken in float32 whatever the model's dtype; the mean and standard deviation
of log p over the vocabulary (Min-K%++'s mu and sigma) are computed exactly, the variance as
``sum p (log p - mu)^2`` (equal to the reference's ``sum p (log p)^2 - mu^2``, without its
cancellation).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contam.providers.base import TextLogprobs

__all__ = ["texts_logprobs_blocking", "token_statistics"]


def token_statistics(logits: Any, input_ids: Any) -> tuple[Any, Any, Any]:
    """(log p of each next token, mu, sigma) per scored position, from one sequence's ``logits``
    (positions x vocabulary) and its ``input_ids``; float32 tensors of length n - 1."""
    import torch

    log_probs = torch.log_softmax(logits[:-1].float(), dim=-1)
    probs = log_probs.exp()
    token_log_probs = log_probs.gather(-1, input_ids[1:].unsqueeze(-1)).squeeze(-1)
    # p log p is 0 where p is 0 (a masked logit's log p is -inf, and 0 * -inf would be NaN).
    weighted = torch.where(probs > 0, probs * log_probs, torch.zeros_like(probs))
    mu = weighted.sum(-1)
    centred = torch.where(probs > 0, log_probs - mu.unsqueeze(-1), torch.zeros_like(probs))
    sigma = (probs * centred.square()).sum(-1).sqrt()
    return token_log_probs, mu, sigma


def texts_logprobs_blocking(model: Any, tokenizer: Any, texts: Sequence[str], *, device: str,
                            served_model: str) -> list[TextLogprobs]:
    """One forward pass over ``texts``, right-padded, under ``inference_mode``; a result per text."""
    import torch

    encoded = [tokenizer.encode(text) for text in texts]
    width = max(len(ids) for ids in encoded)
    ids = torch.zeros((len(encoded), width), dtype=torch.long, device=device)
    mask = torch.zeros_like(ids)
    for row, tokens in enumerate(encoded):
        ids[row, :len(tokens)] = torch.tensor(tokens, dtype=torch.long)
        mask[row, :len(tokens)] = 1
    with torch.inference_mode():
        logits = model(ids, attention_mask=mask).logits
        return [_scored(tokenizer, logits[row, :len(tokens)], ids[row, :len(tokens)], served_model)
                for row, tokens in enumerate(encoded)]


def _scored(tokenizer: Any, logits: Any, ids: Any, served_model: str) -> TextLogprobs:
    token_log_probs, mu, sigma = token_statistics(logits, ids)
    return TextLogprobs(tokens=tuple(tokenizer.convert_ids_to_tokens(ids[1:].tolist())),
                        logprobs=tuple(token_log_probs.tolist()), means=tuple(mu.tolist()),
                        stds=tuple(sigma.tolist()), served_model=served_model,
                        input_tokens=int(ids.numel()), http_status=None)
