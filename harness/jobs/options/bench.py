"""The options of `contam bench`."""

from __future__ import annotations

from dataclasses import dataclass

from contam.harness.declare import flag_of, no_progress_option, option
from contam.harness.errors import UserError
from contam.harness.jobs.options.lane import model_list
from contam.harness.jobs.options.store import store_option

__all__ = ["BenchOptions"]


@dataclass(frozen=True, kw_only=True)
class BenchOptions:
    """``contam bench``'s arguments, by the same names."""

    config: str | None = option("config", nargs="?",
                                help="run config whose [[models]] are benchmarked")

    emulator: bool = option("--emulator", default=False, action="store_true",
                            help="benchmark all four protocols against an emulator (a child "
                                 "process), with a bare httpx loop as the floor")
    requests: int | None = option("--requests", type=int,
                                  help="probe requests per model (default 256)")
    concurrency: int | None = option(
        "--concurrency", type=int,
        help="in flight per model (default: the config's; 32 with --emulator)")
    latency_ms: float | None = option("--latency-ms", type=float,
                                      help="emulator latency (default 1000)")
    rpm: float | None = option("--rpm", type=float, help="emulator RPM limit (also the models' "
                                                         "limit unless --model-rpm); skips the "
                                                         "bare-loop floor")
    model_rpm: float | None = option(
        "--model-rpm", type=float,
        help="RPM limit the emulator's models are configured with (e.g. 2 x --rpm)")
    models: list[str] | None = option("--models", convert=model_list,
                                      help="comma-separated model names from the config")
    no_floor: bool = option("--no-floor", default=False, action="store_true",
                            help="skip the bare httpx loop")
    format: str = option("--format", default="table", choices=("table", "json"),
                         help="how the report is printed (default table)")
    store: str | None = store_option("bench store (default: a temporary file)")
    no_progress: bool = no_progress_option()

    def check(self) -> None:
        """A config or the emulator, and the flags that fit the one chosen; one line if not."""
        if self.emulator == bool(self.config):
            raise UserError("contam bench: give either a CONFIG file or --emulator")
        if not self.emulator and (self.latency_ms is not None or self.rpm or self.model_rpm):
            raise UserError("contam bench: --latency-ms, --rpm and --model-rpm apply to "
                            "--emulator only")
        if self.emulator and self.models:
            raise UserError("contam bench: --models selects from a CONFIG file, not --emulator's "
                            "models")
        for name in ("requests", "concurrency", "rpm", "model_rpm"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise UserError(f"{flag_of(BenchOptions, name)} must be a positive number, not "
                                f"{value:g}")
        if self.latency_ms is not None and self.latency_ms < 0:
            raise UserError(f"--latency-ms must not be negative, not {self.latency_ms:g}")
