"""Server hints about how long to wait, parsed once for every provider.

Providers say "come back later" in several dialects: ``Retry-After`` as seconds or as an HTTP date
(RFC 9110), OpenAI's ``retry-after-ms`` and ``x-ratelimit-reset-*`` as Go durations (``1s``,
``6m0s``, ``20ms``), Anthropic's ``anthropic-ratelimit-*-reset`` as RFC 3339 timestamps, and
Gemini's ``RetryInfo.retryDelay`` as a protobuf duration (``"1.5s"``). Each parser returns seconds
to wait (never negative) or ``None`` when the value is absent or unreadable: a garbled hint must not
turn a retryable error into a crash.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime

__all__ = [
    "seconds_from_retry_after",
    "seconds_from_duration",
    "seconds_until_timestamp",
    "longest",
    "first_header_hint",
]

_DURATION_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6,
                   "μs": 1e-6, "ns": 1e-9}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_WHOLE = re.compile(rf"(?:{_DURATION_PART.pattern})+")


def _non_negative(seconds: float) -> float | None:
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _now() -> datetime:
    return datetime.now(timezone.utc)


def seconds_from_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """``Retry-After``: delay-seconds (integer by the RFC; fractions accepted) or an HTTP date."""
    return _parse(value, lambda text: _seconds_until(parsedate_to_datetime(text), now))


def seconds_from_duration(value: str | None) -> float | None:
    """Go / protobuf durations: ``1s``, ``6m0s``, ``1h2m3.5s``, ``20ms``, ``1.5s``; a bare number
    is seconds."""
    return _parse(value, _duration_seconds)


def seconds_until_timestamp(value: str | None, *, now: datetime | None = None) -> float | None:
    """RFC 3339 timestamps such as Anthropic's ``2026-01-01T00:00:30Z``."""
    return _parse(value, lambda text: _seconds_until(
        datetime.fromisoformat(text.replace("Z", "+00:00")), now), plain_number=False)


def _parse(value: str | None, parse_text: Callable[[str], float | None], *,
           plain_number: bool = True) -> float | None:
    """Blank -> None; a bare number is seconds (where the dialect allows one); otherwise the
    dialect's own form, and anything unreadable is None rather than an exception."""
    text = value.strip() if value else ""
    if not text:
        return None
    if plain_number:
        try:
            return _non_negative(float(text))
        except ValueError:
            pass
    try:
        return parse_text(text)
    except (TypeError, ValueError, IndexError):
        return None


def _duration_seconds(text: str) -> float | None:
    if not _DURATION_WHOLE.fullmatch(text):
        return None
    return _non_negative(sum(float(number) * _DURATION_UNITS[unit]
                             for number, unit in _DURATION_PART.findall(text)))


def _seconds_until(when: datetime, now: datetime | None) -> float | None:
    if when.tzinfo is None:  # HTTP dates are GMT; a zone-less timestamp is read as UTC too
        when = when.replace(tzinfo=timezone.utc)
    return _non_negative((when - (now or _now())).total_seconds())


def longest(hints: Iterable[float | None]) -> float | None:
    """The largest of the hints that are present: every one of them is a minimum wait."""
    present = [hint for hint in hints if hint is not None]
    return max(present) if present else None


HintParser = Callable[[str | None], float | None]


def first_header_hint(headers: Mapping[str, str], parsers: Iterable[tuple[str, HintParser]]
                      ) -> float | None:
    """The first header, in order of preference, that carries a readable hint.

    ``parsers`` pairs a header name with a function turning its value into seconds.
    """
    for name, parse in parsers:
        hint = parse(headers.get(name))
        if hint is not None:
            return hint
    return None
