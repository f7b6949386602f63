"""`contam emulator`'s options, each field its flag (:mod:`contam.harness.declare`). Light: the parser
reads them without importing the server."""

from __future__ import annotations

from dataclasses import dataclass

from contam.harness.declare import option
from contam.harness.emulator.skill import EXPOSURE_HELP, SKILL_HELP  # text only: no server imported

__all__ = ["EmulatorOptions"]


@dataclass(frozen=True, kw_only=True)
class EmulatorOptions:
    """Where the emulator listens, how it misbehaves, and (``items``) what it knows."""

    host: str = option("--host", default="127.0.0.1",
                       help="address to listen on (default 127.0.0.1)")
    port: int = option("--port", default=8765, type=int,
                       help="TCP port (default 8765; 0 = any free one)")
    latency_ms: float = option("--latency-ms", default=0.0, type=float,
                               help="milliseconds before each reply (default 0)")
    rpm: float | None = option("--rpm", type=float, help="enforced requests-per-minute limit")
    faults: str = option("--faults", default="",
                         help="e.g. 500=0.05,529=0.02,reset=0.01,malformed=0.01,hang=0.01")
    served_model: str | None = option("--served-model",
                                      help="answer as this model instead of the requested one")
    quota_per_day: int | None = option(
        "--quota-per-day", type=int,
        help="requests per (API, model) before the day's quota runs out")
    jitter_ms: float = option("--jitter-ms", default=0.0, type=float,
                              help="latency varies by +/- this much")
    seed: int | None = option("--seed", type=int,
                              help="seed for fault draws and jitter (reproducible runs)")
    slots: int | None = option(
        "--slots", type=int,
        help="requests worked on at once, the rest queue (a served model's batch size)")
    batch_processing_s: float = option(
        "--batch-processing-s", default=0.0, type=float,
        help="seconds a batch job takes before its results are ready")
    batch_fail_rate: float = option("--batch-fail-rate", default=0.0, type=float,
                                    help="probability that a batch line fails with a 500")
    batch_expire_rate: float = option("--batch-expire-rate", default=0.0, type=float,
                                      help="probability that a batch line expires unprocessed")
    items: str | None = option(
        "--items", help="an items file (CSV or JSONL, extra columns allowed): answer like a model "
                        "that knows it (the reference for most documented items); " + SKILL_HELP)
    profile: str = option("--profile", default="contaminated", choices=("contaminated", "clean"),
                          help="with --items: contaminated shows memorisation signals on "
                               "documented items (default), clean none")
    documented: str | None = option(
        "--documented", metavar="SUBSET[,SUBSET]", group="knowledge",
        help="with --items: the subsets the emulated models know well (default: official)")
    exposure: str | None = option("--exposure", metavar="COLUMN", group="knowledge",
                                  help=EXPOSURE_HELP)
