"""A run's whole story in one place: Python logging for contam's packages, and a file per run.

Modules log to ``logging.getLogger(__name__)`` (loggers under ``harness``, ``providers`` and
``metrics``). On the terminal nothing from logging is shown by default (the live display and the
summary lines tell the story); ``-v`` shows INFO records on stderr, ``-vv`` DEBUG. Every run and
judge pass also writes its INFO records (every retry with its cause, every server hint and
cool-down, every stop) to ``<store stem>.<run_id>.log`` beside the store.

Every record passes :func:`contam.providers.base.redact` before any handler writes it, so an API key
never reaches a log, then :func:`contam.harness.text.visible`, so no ESC or bidi character does.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from contam.harness.store.files import open_own
from contam.harness.text import visible
from contam.providers.base import redact

__all__ = ["PACKAGES", "configure_logging", "run_log", "run_log_path"]

PACKAGES = ("contam.harness", "contam.providers", "contam.metrics")
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _RedactKeys(logging.Filter):
    """Scrubs registered API keys from the finished message (arguments included), and shows its
    control and bidi characters as escapes (a model name with ESC must not restyle stderr)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = visible(redact(record.getMessage())), None
        return True


class _CurrentStderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time: under the live display, that is rich's
    redirect, which prints the line above the display instead of through it."""

    @property  # type: ignore[override]
    def stream(self):  # noqa: ANN201 - the base class's attribute
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:  # noqa: ANN001
        pass  # always the current sys.stderr


class _OwnFileHandler(logging.FileHandler):
    """Appends to the user's own 0600 log, or a new one: never through a link another user
    planted beside the store (:func:`contam.harness.store.files.open_own`)."""

    def _open(self):  # noqa: ANN202 - the base class's method
        return io.TextIOWrapper(open_own(Path(self.baseFilename)), encoding="utf-8",
                                write_through=True)

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's name
        """A record that cannot be written (a full disk) is dropped quietly: the run's own
        one-line message says what went wrong, not a traceback per record."""

    def close(self) -> None:
        with contextlib.suppress(OSError):  # a full disk: what is unwritten stays so
            super().close()


def configure_logging(verbosity: int = 0) -> None:
    """Console logging for this process: 0 shows nothing, 1 INFO, 2 or more DEBUG. Idempotent."""
    level = {0: logging.CRITICAL + 1, 1: logging.INFO}.get(verbosity, logging.DEBUG)
    for name in PACKAGES:
        logger = logging.getLogger(name)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False  # our handlers only, never Python's last-resort stderr printer
        for handler in [h for h in logger.handlers if isinstance(h, _CurrentStderr)]:
            logger.removeHandler(handler)
        logger.addHandler(_handler(_CurrentStderr(), level))


def run_log_path(store_path: str | Path, run_id: str) -> Path:
    """``runs/paper.duckdb`` and run ``r1`` -> ``runs/paper.r1.log``."""
    store_path = Path(store_path)
    return store_path.with_name(f"{store_path.stem}.{run_id}.log")


@contextmanager
def run_log(store_path: str | Path, run_id: str) -> Iterator[Path]:
    """Every INFO record of contam's packages goes to the run's own file while this is open."""
    path = run_log_path(store_path, run_id)
    handler = _handler(_OwnFileHandler(path, encoding="utf-8"), logging.INFO)
    loggers = [logging.getLogger(name) for name in PACKAGES]
    for logger in loggers:
        logger.setLevel(min(logger.level or logging.DEBUG, logging.INFO))
        logger.addHandler(handler)
    try:
        yield path
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
        handler.close()


def _handler(handler: logging.Handler, level: int) -> logging.Handler:
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter(_FORMAT))
    handler.addFilter(_RedactKeys())
    return handler
