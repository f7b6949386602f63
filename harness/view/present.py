"""Turning what the desks and queries return into what pages and their scripts show: the
progress line, numbers, a screen as JSON (only the fields the page may carry), and every value a
page shows with its hidden characters made visible."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from contam.harness.report.texts.format import is_missing
from contam.harness.store.raters import ADJUDICATOR
from contam.harness.text import visible
from contam.harness.view.labelling import Screen
from contam.harness.view.queue import Progress

__all__ = ["progress_text", "onward_links", "number", "screen_json", "duration", "short", "shown"]


def shown(value: Any) -> Any:
    """A value as a page shows it (Jinja's ``finalize``, so on every page, browse and report
    included): control, bidi and zero-width characters as escapes (``\\u202e``), as `contam sql`
    prints them, so that an answer cannot reverse or hide what a rater reads. Safe HTML stays
    safe: the escapes are plain ASCII."""
    if isinstance(value, Markup):
        return Markup(visible(str(value)))
    return visible(value) if isinstance(value, str) else value


def duration(seconds: float) -> str:
    """``45 s``, ``12 min``, ``5 h 48 min``."""
    if seconds < 60:
        return f"{max(0, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


def progress_text(progress: Progress) -> str:
    """``132 / 1,600 · 4.2 a minute · about 5 h 48 min left``; ``52 / 52 · all done``."""
    parts = [f"{progress.done:,} / {progress.total:,}"]
    if progress.total and progress.done >= progress.total:
        parts.append("all done")
    elif progress.seconds_per_label:
        parts.append(f"{60 / progress.seconds_per_label:,.1f} a minute")
        parts.append(f"about {duration(progress.seconds_left or 0)} left")
    elif progress.done < progress.total:
        parts.append("pace after two labels")
    return " · ".join(parts)


def onward_links(mode: str, *, own_link: bool, blind: bool) -> list[tuple[str, str]]:
    """Where a finished desk leads: a rater's own link only back to its desk (new answers may
    come); a blind desk to nothing that names a model; otherwise to what comes next."""
    if mode == "adjudicate":
        return [(f"/report?human={ADJUDICATOR}", "Read the report on the settled labels"),
                ("/agree", "See how the raters agree")]
    if own_link:
        return [("/label", "Look for new cells")]
    if blind:
        return [("/label", "Label as another rater")]
    return [("/agree", "See how the raters agree"), ("/adjudicate", "Settle their disagreements"),
            ("/", "Browse every cell")]


def number(value: Any, digits: int = 3) -> str:
    """As the report's fmt_num, but a missing value is the en dash the view's pages use for every
    empty field (templates and view.js), not the report's em dash."""
    if is_missing(value):
        return "–"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def short(text: str | None, limit: int = 160) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def screen_json(screen: Screen) -> dict[str, Any]:
    """A screen for the page's script; the card holds only what the page itself shows."""
    card = None
    if screen.cell is not None:
        card = {k: v for k, v in screen.cell.items() if k not in ("scores", "judges")}
        for name in ("bleu2", "bertscore_f1"):
            if name in card:
                card[name] = number(card[name])
    return {"cell": card, "said": screen.said,
            "progress": {"done": screen.progress.done, "total": screen.progress.total,
                         "text": progress_text(screen.progress)}}
