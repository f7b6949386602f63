"""The report page: `contam report`'s sections and figures inside the view, built from the store in a
thread of its own when asked for (the page says it is building until then) and built again only
when the store has changed or other raters are asked for."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from contam.harness.errors import UserError
from contam.harness.report.model import Report
from contam.harness.report.writers.html import ReportPage, report_page
from contam.harness.view.follow import store_version
from contam.harness.view.gate import StoreGate

__all__ = ["ReportPages", "Built", "RaterSide", "rater_sides"]

BuildKey = tuple[Any, ...]  # the store's version and the raters and contrast asked for


@dataclass(frozen=True)
class Built:
    """A finished build: the page's data, or the one line saying why there is no report."""

    page: ReportPage | None = None
    raters: tuple["RaterSide", ...] = ()  # human, judge
    generated: str = ""
    error: str | None = None
    status: int = 200  # 400: the store cannot give this report; 500: building it failed


class ReportPages:
    """``get`` answers the last build for this store version and these raters, or None while a
    build runs (one at a time: matplotlib's pyplot is not threadsafe)."""

    def __init__(self, gate: StoreGate) -> None:
        self.gate = gate
        self._lock = threading.Lock()
        self._built: tuple[BuildKey, Built] | None = None
        self._building: BuildKey | None = None

    def get(self, *, human: str | None = None, judge: str | None = None,
            contrast: str | None = None) -> Built | None:
        with self.gate.reading() as store:
            key = (store_version(store), human, judge, contrast)
        with self._lock:
            if self._built is not None and self._built[0] == key:
                return self._built[1]
            if self._building is None:
                self._building = key
                threading.Thread(target=self._build, args=(key,), daemon=True).start()
            return None

    def _build(self, key: BuildKey) -> None:
        try:
            built = _build(self.gate, *key[1:])
        except UserError as exc:
            built = Built(error=f"no report: {exc}", status=400)
        except Exception as exc:  # noqa: BLE001 -- shown on the page, not lost in a thread
            built = Built(error=f"the report failed: {type(exc).__name__}: {exc}", status=500)
        with self._lock:
            self._built, self._building = (key, built), None


def _build(gate: StoreGate, human: str | None, judge: str | None, contrast: str | None) -> Built:
    from contam.harness.report.analysis import build_report, parse_contrast  # pandas, scipy, matplotlib
    from contam.harness.report.writers.output import figure_pngs
    from contam.harness.report.inputs.study_settings import study_inputs

    given = {"contrast": parse_contrast(contrast)} if contrast else {}  # else its default
    with gate.reading() as store:
        # the study's own settings (subsets, prompt, by) from the newest run, as `contam report` does
        report = build_report(store, human=human, judge=judge, study=study_inputs(store, None), **given)
    when = str(report.meta.get("generated_at", "")).replace("T", " ").rstrip("Z")
    asked = {"human": human, "judge": judge, "contrast": contrast}
    return Built(report_page(report, figure_pngs(report)), rater_sides(report, asked), when)


@dataclass(frozen=True)
class RaterSide:
    """One side's rater (human or judge): who, how many of the report's cells it labelled, and
    the other raters of that side with their counts and the page's link to each."""

    title: str  # "Human rater", "Judge"
    kind: str  # "human", "judge"
    chosen: str | None
    cells: int = 0
    total: int = 0
    others: tuple[tuple[str, int, str], ...] = ()  # (rater, cells, link)

    @property
    def head(self) -> str:
        """``Human rater: human:bob, 52 of 72 cells``; the page adds the others, as links."""
        if self.chosen is None:
            return f"{self.title}: none (no {self.kind} labels in this store)"
        return f"{self.title}: {self.chosen}, {self.cells} of {self.total} cells"


def rater_sides(report: Report, asked: dict[str, str | None]) -> tuple[RaterSide, ...]:
    """Which raters the numbers below come from, and how far each goes."""
    meta = report.meta
    return tuple(_side(title, kind, report.rater(kind), meta["raters"][kind], meta["cells"], asked)
                 for title, kind in (("Human rater", "human"), ("Judge", "judge")))


def _side(title: str, kind: str, chosen: str | None, coverage: dict[str, int], total: int,
          asked: dict[str, str | None]) -> RaterSide:
    def link(rater: str) -> str:
        return "/report?" + urlencode({k: v for k, v in {**asked, kind: rater}.items() if v})

    others = tuple((rater, n, link(rater)) for rater, n in coverage.items() if rater != chosen)
    return RaterSide(title, kind, chosen, coverage.get(chosen, 0) if chosen else 0, total, others)
