"""What `contam view` is started with, as Python callers give it: :func:`view_options` makes the
checked :class:`ViewOptions` (declared with the command line's flags in contam.harness.jobs.options.view)
from the command line's keywords."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contam.harness.jobs.options.view import DEFAULT_PORT, ViewOptions, rater_name, rater_names

__all__ = ["ViewOptions", "view_options", "rater_name", "DEFAULT_PORT"]


def view_options(*, store: str | Path, unblind: bool = False, raters: str | None = None,
                 overlap: float | None = None, **keywords: Any) -> ViewOptions:
    """``contam view``'s values as checked options (``unblind`` and ``raters`` as the command
    line gives them; the rest :class:`ViewOptions`' fields); a bad value is one UserError line."""
    return ViewOptions(store=Path(store), blind=not unblind, raters=rater_names(raters),
                       overlap=overlap or 0.0, **keywords)
