"""The options of `contam demo`."""

from __future__ import annotations

from dataclasses import dataclass

from contam.harness.declare import no_progress_option, option

__all__ = ["DemoOptions"]


@dataclass(frozen=True, kw_only=True)
class DemoOptions:
    """``contam.harness.jobs.demo.demo``'s arguments, by the same names."""

    out_dir: str = option("--out", default="runs/demo", help="folder for the store and report")
    probes: bool = option("--probes", default=False, action="store_true",
                          help="also every contamination probe on a contaminated and a clean "
                               "emulated model that know the demo items (in-process emulators)")
    no_progress: bool = no_progress_option()
