"""The report page: `contam report`'s HTML, with its figures, built from the store when it is
asked for and built again only when the store has changed (or other raters are asked for)."""

from __future__ import annotations

import html
import threading
from typing import Any

from harness.view.follow import store_version
from harness.view.gate import StoreGate

__all__ = ["ReportPages"]

_NAV = ('<nav style="font:0.95rem system-ui,sans-serif;margin-bottom:1rem">'
        '<a href="/">Browse</a> · <a href="/agree">Agreement</a> · {raters} · built {when} UTC '
        '(reloading rebuilds it once the store has changed; choose raters with '
        '<code>?human=human:NAME&amp;judge=judge:MODEL</code>)</nav>')


class ReportPages:
    def __init__(self, gate: StoreGate) -> None:
        self.gate = gate
        self._lock = threading.Lock()  # one build at a time: matplotlib's pyplot is not threadsafe
        self._cached: tuple[Any, str] | None = None

    def html(self, *, human: str | None = None, judge: str | None = None,
             contrast: str | None = None) -> str:
        from harness.jobs.report import render  # pandas, scipy, matplotlib: only when asked for
        from harness.report.analysis import build_report, parse_contrast

        with self._lock:
            with self.gate.reading() as store:
                key = (store_version(store), human, judge, contrast)
                if self._cached is not None and self._cached[0] == key:
                    return self._cached[1]
                given = {"contrast": parse_contrast(contrast)} if contrast else {}  # else its default
                built = build_report(store, human=human, judge=judge, **given)
            page = _with_nav(render(built, "html"), built)
            self._cached = (key, page)
            return page


def _with_nav(page: str, built: dict[str, Any]) -> str:
    raters = (f"human rater <code>{html.escape(str(built.get('human_rater')))}</code>, judge "
              f"<code>{html.escape(str(built.get('judge_rater')))}</code>")
    when = str(built.get("meta", {}).get("generated_at", "")).replace("T", " ").rstrip("Z")
    nav = _NAV.format(raters=raters, when=html.escape(when))
    return page.replace("<body>", "<body>\n" + nav, 1)
