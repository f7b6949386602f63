"""The options of `contam score`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contam.harness.declare import option, progress_option

__all__ = ["ScoreOptions", "RayOptions", "LOCAL_RAY"]

LOCAL_RAY = "local"  # --ray without an address: a Ray started here


@dataclass(frozen=True)
class RayOptions:
    """Where BERTScore's shards go: a Ray cluster's address, and cores per actor without GPUs."""

    address: str = LOCAL_RAY
    cpus_per_actor: int = 4  # on a cluster without GPUs: cores per CPU actor (one model each)


def _metric_help() -> str:
    """``--metric``'s help, from the metric registry: each metric's --metric name (and its stored
    name where that differs), then the defaults."""
    from contam.metrics.metric_registry import DEFAULT_METRICS, METRICS

    names = [spec.choice + (f" (or {spec.name})" if spec.flag else "") for spec in METRICS.values()]
    defaults = " and ".join(METRICS[name].choice for name in DEFAULT_METRICS)
    return (f"{', '.join(names)}; repeatable or a comma list (default: the study's [scoring] "
            f"metrics, else {defaults})")


def _ray(address: str | None) -> Any:
    """``--ray [ADDRESS]`` -> the Ray options (none without the flag)."""
    return RayOptions(address=address) if address else None


@dataclass(frozen=True, kw_only=True)
class ScoreOptions:
    """``contam score``'s options; each field with a flag is that flag."""

    metrics: Sequence[str] | None = option(  # None: the study's [scoring] metrics
        "--metric", action="append", metavar="NAME[,NAME]",
        help=_metric_help)
    config: str | Path | None = option(
        "--config", help="the study config whose [scoring] metrics, numeric_tolerance and regex "
                         "apply (default: what the newest contam run recorded)")
    bertscore_model: str | None = option(
        "--bertscore-model", help="model name or local directory (default roberta-large; "
                                  "sentence-transformers/all-MiniLM-L6-v2 is the offline encoder)")
    layer: int | None = option("--bertscore-layers", type=int,
                               help="layer to take embeddings from")
    baseline: str | None = option(
        "--baseline", help="a baseline file for rescaling (bert-score's CSV format)")
    rescale: bool = option("--no-rescale", default=True, action="store_false",
                           help="raw F1, no baseline rescaling")
    device: str | None = option("--device", help="cpu; cuda = every visible GPU; cuda:1 = that "
                                                 "one (default: every GPU when there is one, else cpu)")
    precision: str | None = option(
        "--precision", choices=("fp32", "tf32", "bf16"),
        help="BERTScore arithmetic (default tf32 on CUDA, fp32 on CPU; fp32 = bert-score to 1e-6)")
    token_budget: int | None = option(
        "--token-budget", type=int,
        help="tokens per encoder batch, padding included (default 2048 on CPU, 65536 on CUDA)")
    idf: bool = option("--idf", default=False, action="store_true",
                       help="weigh BERTScore's tokens by idf over the answered items' references, "
                            "as bert-score's idf=True (default: off)")
    ray: RayOptions | None = option(
        "--ray", nargs="?", const=LOCAL_RAY, metavar="ADDRESS", convert=_ray,
        help="score BERTScore on a Ray cluster: no value for a local Ray, 'auto' for the cluster "
             "this node joined, or ray://host:10001 (pip install 'contam[ray]')")
    progress: bool = progress_option()  # a progress bar on stderr
    shard_pairs: int | None = None  # BERTScore pairs per shard (None: the default; tests shrink it)
