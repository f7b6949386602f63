"""The options of the lane jobs: `contam run`, `contam probe KIND` and `contam judge`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from contam.harness.declare import no_progress_option, option
from contam.harness.errors import UserError

if TYPE_CHECKING:
    from rich.console import Console

    from contam.harness.engine.batch_lane import BatchOptions
    from contam.harness.engine.lanes import ProviderFactory
    from contam.harness.jobs.live import LiveBoard

__all__ = ["JobOptions", "RunOptions", "ProbeOptions", "JudgeOptions", "model_list"]


def model_list(text: str | None) -> list[str] | None:
    """``--models a,b`` -> ["a", "b"]; None (or only commas): every configured model."""
    from contam.harness.config import model_names

    return model_names(text)


@dataclass(frozen=True, kw_only=True)
class JobOptions:
    """What a lane job is told besides the config. The command line sets the flags; tests, the
    demo and benchmarks set the rest. ``CLI_HELP``: a subclass's own help for a shared flag."""

    CLI_HELP: ClassVar[dict[str, str]] = {"models": "comma-separated model names from the config",
                                          "limit": "at most N items per model"}

    models: list[str] | None = option("--models", convert=model_list)  # None: all
    limit: int | None = option("--limit", type=int)  # the first N items per model; judge: N labels
    no_progress: bool = no_progress_option()
    console: Console | None = None  # where the live display goes (stdout)
    provider_factory: ProviderFactory | None = None  # None: contam.providers.registry.create_provider
    handle_signals: bool = True  # SIGINT/SIGTERM drain the run (main thread only)
    live: LiveBoard | None = None  # the store host's progress (contam.harness.jobs.live): shown the lanes

    def check_limit(self) -> None:
        """A limit, if any, that is a positive number (or one line why not)."""
        if self.limit is not None and self.limit <= 0:
            raise UserError(f"--limit must be a positive number, not {self.limit}")


@dataclass(frozen=True, kw_only=True)
class JudgeOptions(JobOptions):
    """`contam judge`'s: a lane job's, the answering models to judge and a number of cells."""

    CLI_HELP: ClassVar[dict[str, str]] = {"models": "judge only these answering models",
                                          "limit": "at most N cells"}


@dataclass(frozen=True, kw_only=True)
class RunOptions(JobOptions):
    """A run's options: the lane jobs' own, and how batch mode goes (``batch_options``, from
    Python, overrides the two batch flags)."""

    batch: bool = option("--batch", default=False, action="store_true",
                         help="openai, anthropic and gemini models go as batch jobs (about half price)")
    batch_fallback: str = option(
        "--batch-fallback", default="followup", choices=("followup", "sync"),
        help="failed or expired batch requests: a follow-up job (default) or the synchronous path")
    batch_poll_max: float | None = option(
        "--batch-poll-max", type=float,
        help="longest wait between two polls of a batch job, seconds (default 60)")
    batch_options: BatchOptions | None = None

    def batch_settings(self) -> BatchOptions:
        """How the batch lanes follow their jobs: ``batch_options``, else the two flags'."""
        from contam.harness.engine.batch_lane import BatchOptions

        if self.batch_options is not None:
            return self.batch_options
        if self.batch_poll_max is not None and self.batch_poll_max <= 0:
            raise UserError(f"--batch-poll-max must be a positive number of seconds, not "
                            f"{self.batch_poll_max}")
        poll_max = self.batch_poll_max or BatchOptions.poll_max_s
        return BatchOptions(poll_initial_s=min(BatchOptions.poll_initial_s, poll_max),
                            poll_max_s=poll_max, fallback=self.batch_fallback)


@dataclass(frozen=True, kw_only=True)
class ProbeOptions(RunOptions):
    """A probe's options: those of a run (models, limit, progress, --batch) and the probe's own
    parameters (``--samples`` ...), by name, declared by the probe's spec."""

    CLI_HELP: ClassVar[dict[str, str]] = {**JobOptions.CLI_HELP, "limit": "the first N items"}
    CLI_SKIP: ClassVar[tuple[str, ...]] = ("batch_fallback", "batch_poll_max")

    parameters: dict[str, Any] = field(default_factory=dict)
