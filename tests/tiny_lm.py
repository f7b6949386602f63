"""A tiny, randomly initialised causal LM saved as a transformers folder, for tests that need real
logits in well under a second per forward pass: a word-level tokenizer over a few dozen words
(lower-cased, punctuation split off) and a one-layer Llama. It has no chat template, as a base
model would not, unless asked for one (``chat=True``: the messages' contents in a row, as a stand-in
for an instruct model's template)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["WORDS", "CHAT_TEMPLATE", "tiny_model_folder", "reference_min_k_scores"]

WORDS = ("pokémon red blue brown which badge does brock award after his defeat ? boulder "
         "what is the name of town where player begins pallet . , : tm34 bide who gym leader "
         "in cerulean city misty cascade").split()


CHAT_TEMPLATE = "{% for message in messages %}{{ message['content'] }} {% endfor %}"


def tiny_model_folder(folder: Path, *, seed: int = 0, chat: bool = False, words=WORDS,
                      template: str = CHAT_TEMPLATE, layers: int = 1, hidden: int = 16) -> Path:
    """Writes the tokenizer (over ``words``) and the model to ``folder`` (created) and returns
    it; ``chat``: with ``template`` as its chat template."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {word: i for i, word in enumerate(dict.fromkeys(["[UNK]", "<s>", "</s>", *words]))}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    backend.normalizer = normalizers.Lowercase()
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]",
                                        bos_token="<s>", eos_token="</s>")
    if chat:
        tokenizer.chat_template = template
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=2,
                         bos_token_id=1, eos_token_id=2)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def reference_min_k_scores(folder: Path, text: str, ratio: float) -> tuple[float, float, int]:
    """(Min-K%, Min-K%++, scored tokens) of ``text`` computed the way the Min-K%++ authors' run.py
    does it (zjysteven/mink-plus-plus), line for line, but on float64 logits: its variance,
    ``E[(log p)^2] - mu^2``, cancels badly in float32 when the distribution is nearly flat, as a
    random model's is (errors of 1e-4 in Min-K%++)."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    input_ids = torch.tensor(tokenizer.encode(text)).unsqueeze(0)
    with torch.no_grad():
        logits = model(input_ids, labels=input_ids).logits.double()
    input_ids = input_ids[0][1:].unsqueeze(-1)
    probs = F.softmax(logits[0, :-1], dim=-1)
    log_probs = F.log_softmax(logits[0, :-1], dim=-1)
    token_log_probs = log_probs.gather(dim=-1, index=input_ids).squeeze(-1)
    mu = (probs * log_probs).sum(-1)
    sigma = (probs * torch.square(log_probs)).sum(-1) - torch.square(mu)
    k_length = int(len(token_log_probs) * ratio)
    mink = np.mean(np.sort(token_log_probs.cpu())[:k_length]).item()
    mink_plus = (token_log_probs - mu) / sigma.sqrt()
    minkpp = np.mean(np.sort(mink_plus.cpu())[:k_length]).item()
    return mink, minkpp, len(token_log_probs)
