"""Jinja filters of the unblinded pages (cell, agreement): times to the second and metrics by
the names people read (the report's, contam.harness.config_schema.METRIC_DISPLAY)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from contam.harness.config_schema import metric_display

__all__ = ["when", "metric_display", "interval"]


def when(value: Any) -> str:
    """``2026-12-03 23:10:05``: a stored time (UTC) to the second; empty for none. Through a
    running job's host a time arrives as ISO text, from the file as a datetime."""
    if value is None or value == "":
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value).replace("T", " ").split(".")[0]


def interval(bounds: Any, digits: int = 2) -> str:
    """``[0.21, 0.68]`` from (low, high); an en dash where either end is missing."""
    low, high = bounds if bounds else (None, None)
    if low is None or high is None or low != low or high != high:  # NaN is not equal to itself
        return "–"
    return f"[{low:.{digits}f}, {high:.{digits}f}]"
