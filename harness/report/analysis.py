"""Store -> the report object: the rater choice, every section assembled, and the notes.

The sections come from :mod:`contam.harness.report.parts.labels` (what the human and judge labels say),
:mod:`contam.harness.report.parts.surface` (what the surface metrics say), :mod:`contam.harness.report.parts.contamination`,
:mod:`contam.harness.report.parts.provenance` and :mod:`contam.harness.report.parts.probes`, all over the (item, model) cells of
:mod:`contam.harness.report.inputs.cells` (SQL over the views for the counts, ``contam.harness.report.statistics.named_tests`` for the rest).

Keys follow ARCHITECTURE.md's report contract exactly; everything beyond it sits under extra keys
(``regimes``, ``mcnemar``, ``cmh``, ``logistic``, ``inter_annotator``, ``abstention``, ``missing``,
``answer_length``, ``judge_gap``, ``surface_by_subset``, ``notes``, ``meta``, ``provenance``). A
section without data is ``None`` and ``notes`` says why.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from contam.harness import __version__
from contam.harness.errors import UserError
from contam.harness.declare import flag_of
from contam.harness.jobs.options.report import ReportOptions
from contam.harness.report.parts import contamination
from contam.harness.report.parts import labels
from contam.harness.report.parts import probes
from contam.harness.report.parts import provenance
from contam.harness.report.parts import study as study_parts
from contam.harness.report.parts import rule_metrics as study_report
from contam.harness.report.parts import surface
from contam.harness.report.parts import absent
from contam.harness.report.parts import validation
from contam.harness.report.inputs.cells import LABELS, METRICS, Cells
from contam.harness.report.inputs.contrast import NO_SUBSETS, choose_contrast
from contam.harness.report.inputs.study_settings import StudyInputs
from contam.harness.store import Store, utc_now
from contam.harness.store.raters import HUMAN_RATER_SQL, JUDGE_RATER_SQL
from contam.harness.study import PAPER_CONTRAST
from contam.metrics.outcome import Outcome, default_outcome, parse_outcome

__all__ = ["build_report", "parse_contrast", "figure_regime", "LABELS", "METRICS"]


# -- entry point --------------------------------------------------------------------------------

def build_report(store: Store, *, contrast: tuple[str, str] | None = None,
                 human: str | None = None, judge: str | None = None,
                 study: StudyInputs | None = None, by: str | None = None,
                 correct: str | None = None) -> dict[str, Any]:
    """Everything `contam report` prints, as one JSON-ready dict (see ARCHITECTURE.md, The report);
    ``study``: the settings of the study sections (:mod:`contam.harness.report.parts.study`); ``by``: an
    item column to break accuracy down by (:mod:`contam.harness.report.parts.rule_metrics`); ``contrast``:
    documented,undocumented subsets, else the report's own choice
    (:mod:`contam.harness.report.inputs.contrast`), which may be none: then no contrast section is built;
    ``correct``: what makes an answer correct (``--correct``, :mod:`contam.metrics.outcome`), by default
    the study's ``[study] correct``, else :func:`contam.metrics.outcome.default_outcome`."""
    _require_data(store)
    study = study or StudyInputs()
    outcome = _outcome(store, correct, study.settings)  # a refused --correct before anything else
    choice = choose_contrast(_store_subsets(store), contrast, study.settings.subsets)
    notes: list[dict[str, str]] = []
    human = _human_rater(store, human, notes)
    judge = _judge_rater(store, judge, notes)
    cells = Cells(store, human, judge, outcome)
    titled = _titled(store)
    report = _sections(store, cells, choice.pair, (human, judge, titled), notes)
    if outcome is None or not outcome.labels:  # the paper's report (labels) keeps its keys
        report["outcome"] = str(outcome) if outcome else None
    parts, left_out = study_parts.build(store, cells, report, study, notes)
    report.update(parts)
    report.update(study_report.build(store, cells, report, by, notes))
    if choice.missing:  # the overview's one line: no subsets at all, or no pair the report could pick
        report["without_subsets" if choice.missing == NO_SUBSETS else "without_contrast"] = choice.missing
    report["notes"] = notes
    report["not_in_report"] = [*absent.core_sections(report, titled), *left_out]
    return report


def _sections(store, cells, contrast, shape, notes) -> dict[str, Any]:
    """The accuracy sections count right answers under the outcome (``cells``' ``human``
    column); agreement, κ and metric validity compare with the labels whatever the outcome.
    ``contrast``: the (documented, undocumented) pair, or None: no section compares subsets;
    ``shape``: the human and the judge rater (or None) and whether any item has a title."""
    human, judge, titled = shape
    scored = human if cells.outcome.labels else str(cells.outcome)
    overall = labels.overall(cells) if scored else None
    judge_rows = labels.judge(cells, overall) if judge else None
    frame, order = cells.frame(), labels.model_order(overall)
    labelled = cells.labelled()
    report: dict[str, Any] = {
        "contrast": {"documented": contrast[0], "undocumented": contrast[1]} if contrast else None,
        "human_rater": human, "judge_rater": judge, "overall": overall,
        "per_title": labels.per_title(cells, order, contrast or ()) if scored and titled else None,
        "gap": labels.gap(cells, contrast, notes=notes) if scored and contrast else None,
        "judge": judge_rows,
        "agreement": labels.agreement(labelled, order) if human and judge else None,
    }
    every = _every_model(order, frame)
    regimes = surface.regimes(frame, every, overall, judge_rows)
    by_labels = human and cells.outcome.labels  # rank correlation is with the human ranking
    report["rank_correlation"] = surface.rank_correlation(regimes, notes) if by_labels else None
    report["metric_validity"] = (surface.metric_validity(labelled.frame(), contrast or (), order, notes)
                                 if human else None)
    report.update(_extras(store, cells, frame, contrast, (scored, judge), regimes, every, notes))
    report.update(_across_models(report["gap"], frame, contrast, order, notes))
    return report


def _every_model(order: list[str], frame: pd.DataFrame) -> list[str]:
    """Every model: those the human rater labelled in human order, then the others by name."""
    return order + sorted(set(frame["model"].unique()) - set(order))


def _extras(store, cells, frame, contrast, raters, regimes, order, notes) -> dict[str, Any]:
    """The sections beyond the report contract; ``order``: every model (:func:`_every_model`)."""
    human, judge = raters
    missing = labels.missing(cells, order)
    _note_missing_data(missing, notes, human)
    return {
        "judge_gap": labels.gap(cells, contrast, "judge", notes) if judge and contrast else None,
        "surface_by_subset": surface.surface_by_subset(frame, order, contrast, notes) if contrast else None,
        "regimes": regimes,
        "mcnemar": labels.mcnemar(frame, contrast or (), order) if human else None,
        "inter_annotator": labels.inter_annotator(store, notes),
        "abstention": labels.abstention(cells, order, contrast or ()) if human else None,
        "missing": missing,
        "answer_length": labels.answer_length(cells, order),
        "meta": {**_meta(store, frame), "unlabelled": _unlabelled(frame, raters, notes),
                 "raters": _coverage(store)},
        "provenance": provenance.provenance(store),
        **_probes_and_validation(store, cells, contrast, notes),
    }


def _probes_and_validation(store, cells, contrast, notes) -> dict[str, Any]:
    """The probes section, and the Probe validation that reads its parts (ts-guess's fill
    check is counted once, there)."""
    built = probes.build(store, contrast or PAPER_CONTRAST, notes)  # none: no rows of its own
    return {"probes": built, "validation": validation.build(store, cells.outcome, built)}


def _across_models(gap: list[dict] | None, frame, contrast, order, notes) -> dict[str, Any]:
    """The contamination effect pooled over models (needs human labels, as the gap does)."""
    if not gap:
        return {"cmh": None, "logistic": None}
    return {"cmh": contamination.cmh(gap, notes), "logistic": contamination.logistic(frame, contrast, order, notes)}


# -- validating the request ---------------------------------------------------------------------

def _outcome(store: Store, wanted: str | None, settings) -> Outcome | None:
    """``--correct``, else ``[study] correct``, else the default (labels where the store has
    them, else the first rule metric of ``[scoring] metrics``, else none)."""
    if wanted:
        return parse_outcome(wanted, flag_of(ReportOptions, "correct"))
    if settings.correct:
        return parse_outcome(settings.correct)
    return default_outcome(store.count("latest_labels") > 0, settings.metrics)


def parse_contrast(text: str) -> tuple[str, str]:
    parts = [p.strip() for p in (text or "").split(",")]
    if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
        raise UserError(f"{flag_of(ReportOptions, 'contrast')} {text!r}: expected two different "
                        "subsets, e.g. official,fan")
    return parts[0], parts[1]


def _require_data(store: Store) -> None:
    if store.count("latest_items") == 0:
        raise UserError(f"{store.path}: the store has no items; import items first")
    if store.count("latest_answers") + store.count("latest_labels") + store.count("probe_scores") == 0:
        raise UserError(f"{store.path}: the store has no answers or labels (nor probe scores) to "
                        "report on")


def _titled(store: Store) -> bool:
    return bool(store.query("SELECT count(*) FROM latest_items WHERE title IS NOT NULL AND title <> ''")[0][0])


def _store_subsets(store: Store) -> list[str]:
    return [r[0] for r in store.query(
        "SELECT DISTINCT subset FROM latest_items WHERE subset IS NOT NULL AND subset <> '' ORDER BY 1")]


def _raters(store: Store, where: str) -> list[tuple[str, int]]:
    return [tuple(r) for r in store.query(
        f"SELECT rater, count(*) FROM latest_labels WHERE {where} GROUP BY rater ORDER BY rater")]


def _human_rater(store: Store, wanted: str | None, notes: list) -> str | None:
    return _chosen_rater(store, HUMAN_RATER_SQL, "human", wanted, notes, "accuracy uses")


def _judge_rater(store: Store, wanted: str | None, notes: list) -> str | None:
    return _chosen_rater(store, JUDGE_RATER_SQL, "judge", wanted, notes, "using")


def _chosen_rater(store: Store, sql: str, side: str, wanted: str | None, notes: list,
                  use: str) -> str | None:
    """``wanted``, else the ``side`` (human or judge) rater who labelled the most cells (ties:
    the first by name), with a note naming the others."""
    counted = _raters(store, sql)
    names = [r for r, _ in counted]
    if wanted:
        if wanted not in names:
            raise UserError(f"--{side} {wanted!r}: no such rater ({side} raters: {', '.join(names) or 'none'})")
        return wanted
    if not names:
        return None
    chosen = min(counted, key=lambda r: (-r[1], r[0]))[0]
    if len(names) > 1:
        notes.append({"section": f"{side}_rater", "reason": f"several {side} raters ({', '.join(names)}); "
                      f"{use} {chosen!r}, the one with most labels (choose with --{side})"})
    return chosen


# -- what the figures show, and the report's own facts ------------------------------------------

def figure_regime(report: dict) -> str | None:
    """What figures 1 and 2 show: ``human`` accuracy when human labels exist, else the best
    regime available — ``judge`` accuracy, else ``surface`` metric means — else None."""
    if report.get("overall"):
        return "human"
    if report.get("judge"):
        return "judge"
    return "surface" if report.get("surface_by_subset") else None


def _meta(store: Store, frame: pd.DataFrame) -> dict[str, Any]:
    return {"store": str(store.path), "generated_at": utc_now().isoformat(timespec="seconds") + "Z",
            "harness_version": __version__, "items": int(frame["item_id"].nunique()),
            "models": int(frame["model"].nunique()), "cells": len(frame)}


def _coverage(store: Store) -> dict[str, dict[str, int]]:
    """How many cells each rater labelled, per side: ``{"human": {rater: cells}, "judge": {...}}``."""
    return {side: dict(_raters(store, where))
            for side, where in (("human", HUMAN_RATER_SQL), ("judge", JUDGE_RATER_SQL))}


# -- notes --------------------------------------------------------------------------------------

_SIDE_SECTIONS = {"human": "accuracy, the gap, McNemar and the tests across models",
                  "judge": "the judge's accuracy and gap and the human × judge agreement"}


def _unlabelled(frame: pd.DataFrame, raters: tuple[str | None, str | None], notes: list) -> dict[str, list[str]]:
    """Per side (``human``, ``judge``), the models that side's rater labelled nowhere: they are
    left out of its statistics (McNemar and the paired tests included), named here and in a note."""
    result = {}
    for side, rater in zip(("human", "judge"), raters):
        labelled = set(frame.loc[frame[side].notna(), "model"])
        result[side] = sorted(set(frame["model"]) - labelled) if rater else []
        if result[side]:
            notes.append({"section": f"unlabelled.{side}", "reason": (
                f"{rater!r} labelled no answer of {', '.join(result[side])}: left out of "
                f"{_SIDE_SECTIONS[side]}; label them to include them")})
    return result


def _note_missing_data(missing: list[dict], notes: list, human: str | None) -> None:
    for r in missing:
        parts = []
        if r["empty"]:
            parts.append(f"{r['empty']} empty answer(s) counted as wrong")
        if r["no_answer"]:
            parts.append(f"{r['no_answer']} item(s) without an answer row (counted as wrong unless labelled)")
        if r["unlabelled_human"] and human:  # with no human rater at all, one note says so
            parts.append(f"{r['unlabelled_human']} answer(s) without a human label left out of human statistics")
        if r["empty_labelled_not_wrong"]:
            parts.append(f"{r['empty_labelled_not_wrong']} empty answer(s) labelled right/partial, counted as wrong")
        if parts:
            notes.append({"section": f"missing.{r['model']}", "reason": "; ".join(parts)})

