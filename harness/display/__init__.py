"""Live progress: one row per model (and a line per replica under it), from counters the lanes bump.

The lanes only increment plain integers on :class:`LaneStats` (no per-request rendering, no
per-request timestamps); a display samples them a few times a second and derives the rates from
its own snapshots (:mod:`~contam.harness.display.rates`), so what it costs does not grow with concurrency.

- :class:`LiveProgress` (:mod:`~contam.harness.display.live`): a rich ``Live`` table refreshed at 4 Hz
  from the event loop, laid out for the terminal's width (:mod:`~contam.harness.display.table`;
  narrower: no bar, then each model's details on a second line).
- :class:`PlainProgress` (:mod:`~contam.harness.display.plain`): a line per model every few seconds,
  for ``--no-progress``, pipes and CI.
- :class:`BatchProgress` (:mod:`~contam.harness.display.batch`): the batch jobs' (``contam score``) bar
  or plain lines, per metric.

Only model labels and already-redacted messages are ever shown; keys never reach a display. Both
pass :func:`contam.harness.text.visible` first (:mod:`~contam.harness.display.figures`): an ESC or a bidi
override in a model name, a URL or a server's message is shown as an escape, never obeyed by the
terminal.
"""

from __future__ import annotations

from contam.harness.display.batch import BatchProgress
from contam.harness.display.figures import rate_text, replica_line
from contam.harness.display.live import LiveProgress, open_progress
from contam.harness.display.plain import PlainProgress, plain_lines
from contam.harness.display.rates import RPM_MIN_SPAN_S, RateMeter
from contam.harness.display.table import COLUMNS, render_table
from contam.harness.engine.counters import LaneStats

__all__ = ["LaneStats", "RateMeter", "LiveProgress", "PlainProgress", "open_progress",
           "render_table", "plain_lines", "rate_text", "replica_line", "COLUMNS", "BatchProgress",
           "RPM_MIN_SPAN_S"]
