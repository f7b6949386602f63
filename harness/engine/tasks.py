"""What a caller hands the engine (:mod:`contam.harness.engine.lanes`): lanes of :class:`Task` objects,
the ``accept`` hook that says what to keep from a reply, and how a provider is built."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from contam.harness.config import ModelSpec
from contam.harness.engine.writer import Rows
from contam.providers.base import Provider, ProviderError, Reply, Request

__all__ = ["Task", "Lane", "Accept", "ProviderFactory"]


@dataclass(frozen=True, slots=True)
class Task:
    """One question for one lane. ``context`` is opaque to the engine and handed to ``accept``;
    ``tags`` are columns its ``attempts`` rows carry beside item and model (a probe's ``variant``
    and ``samples``: several requests of one cell, told apart)."""

    item_id: str
    model: str  # the lane's label
    request: Request
    context: Any = None
    tags: Mapping[str, Any] | None = None


Accept = Callable[[Task, Reply, float], Rows]
ProviderFactory = Callable[[ModelSpec, httpx.AsyncClient], Provider]


@dataclass(kw_only=True, eq=False)
class Lane:
    """A configured model and its work. ``tasks`` is consumed lazily, exactly once;
    ``total`` is its length (for the display). ``provider`` is built from ``spec`` when None.
    A lane with ``refused`` set is reported stopped before any lane sends anything."""

    spec: ModelSpec
    tasks: Iterable[Task]
    total: int
    provider: Provider | None = None
    refused: ProviderError | None = None  # known before the run (a missing key): never starts
