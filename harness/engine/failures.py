"""How the engine names what went wrong: the reason a lane stopped, the cause a failed task is
counted under, and which errors are retried after how long (stamina's backoff hook and its
waits). Shared by the HTTP lanes (:mod:`contam.harness.engine.lanes`) and the batch lane."""

from __future__ import annotations

from contam.providers.base import (
    BadKey,
    Fatal,
    MissingKey,
    ProviderError,
    QuotaExhausted,
    ServedModelMismatch,
    Transient,
    Unreachable,
    redact,
)

__all__ = ["InternalError", "WaitTooLong", "stop_reason", "failure_cause", "retry_wait",
           "RETRY_WAIT_INITIAL", "RETRY_WAIT_MAX", "RETRY_WAIT_JITTER"]

# stamina's exponential backoff (seconds) for retryable errors that carry no hint. Tests make
# every wait zero with stamina.set_testing.
RETRY_WAIT_INITIAL, RETRY_WAIT_MAX, RETRY_WAIT_JITTER = 1.0, 60.0, 1.0


class InternalError(Fatal):
    """A provider or ``accept`` raised something unclassified: a bug, which stops its lane."""


class WaitTooLong(QuotaExhausted):
    """The server asked for a wait beyond the model's ``max_hint_s``: stopped like a quota, and the
    next run resumes, rather than a lane cooling down for hours (or, with a hostile hint, years)."""


def stop_reason(exc: BaseException) -> str:
    """The short reason a lane stopped, as the display and the summary show it."""
    if isinstance(exc, WaitTooLong):
        return "wait too long"
    if isinstance(exc, QuotaExhausted):
        return "quota"
    if isinstance(exc, ServedModelMismatch):
        return "substitution"
    if isinstance(exc, MissingKey):
        return "missing key"
    if isinstance(exc, BadKey):
        return "bad key"
    if isinstance(exc, Fatal) and exc.http_status in (401, 403):
        return "auth"
    if isinstance(exc, Transient | Unreachable):  # only a preflight stops a lane on these
        return "unreachable"
    if isinstance(exc, InternalError) or not isinstance(exc, ProviderError):
        return "internal error"
    return "fatal"


_CAUSE_CHARS = 120  # of an error message, in the summary's failure causes


def failure_cause(exc: ProviderError) -> str:
    """What a failed task's last error was, as the summary counts it: the underlying exception
    (``ConnectError: All connection attempts failed``) when there is one, else the error itself."""
    cause = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
    text = redact(str(cause)) or "(no message)"
    return f"{type(cause).__name__}: {text[:_CAUSE_CHARS]}"


def retry_wait(exc: Exception) -> bool | float:
    """stamina's backoff hook: retry only what is named retryable; a hint is the wait."""
    if not isinstance(exc, ProviderError) or not exc.retryable:
        return False
    return exc.retry_after_s if exc.retry_after_s is not None else True
