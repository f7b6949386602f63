"""Store -> the report: the rater choice, every section built once with its own notes, and the
:class:`~contam.harness.report.model.Report` made of them.

The sections come from :mod:`contam.harness.report.parts.labels` (what the human and judge labels
say), :mod:`contam.harness.report.parts.surface` (what the surface metrics say),
:mod:`contam.harness.report.parts.contamination`, :mod:`contam.harness.report.parts.provenance` and
:mod:`contam.harness.report.parts.probes`, all over the (item, model) cells of
:mod:`contam.harness.report.inputs.cells` (SQL over the views for the counts,
:mod:`contam.harness.report.statistics.named_tests` for the rest).

Keys follow ARCHITECTURE.md's report contract exactly; everything beyond it sits under extra keys
(``regimes``, ``mcnemar``, ``cmh``, ``logistic``, ``inter_annotator``, ``abstention``, ``missing``,
``answer_length``, ``judge_gap``, ``surface_by_subset``, ``notes``, ``meta``, ``provenance``). A
section without data is ``None`` and its notes say why.
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
from contam.harness.report.parts import rule_metrics
from contam.harness.report.parts import surface
from contam.harness.report.parts import absent
from contam.harness.report.parts import validation
from contam.harness.report.inputs.cells import LABELS, METRICS, Cells
from contam.harness.report.inputs.contrast import NO_SUBSETS, choose_contrast
from contam.harness.report.inputs.study_settings import StudyInputs
from contam.harness.report.model import OMITTED, Note, Report, Section, noted
from contam.harness.store import Store, utc_now
from contam.harness.store.raters import HUMAN_RATER_SQL, JUDGE_RATER_SQL
from contam.harness.study import PAPER_CONTRAST
from contam.metrics.outcome import Outcome, default_outcome, parse_outcome

__all__ = ["build_report", "parse_contrast", "figure_regime", "Report", "LABELS", "METRICS"]


# -- entry point --------------------------------------------------------------------------------

def build_report(store: Store, *, contrast: tuple[str, str] | None = None,
                 human: str | None = None, judge: str | None = None,
                 study: StudyInputs | None = None, by: str | None = None,
                 correct: str | None = None) -> Report:
    """Everything `contam report` prints, as one :class:`~contam.harness.report.model.Report` (see
    ARCHITECTURE.md, The report); ``study``: the settings of the study sections
    (:mod:`contam.harness.report.parts.study`); ``by``: an item column to break accuracy down by
    (:mod:`contam.harness.report.parts.rule_metrics`); ``contrast``: documented,undocumented subsets,
    else the report's own choice (:mod:`contam.harness.report.inputs.contrast`), which may be none:
    then no contrast section is built; ``correct``: what makes an answer correct (``--correct``,
    :mod:`contam.metrics.outcome`), by default the study's ``[study] correct``, else
    :func:`contam.metrics.outcome.default_outcome`."""
    _require_data(store)
    study = study or StudyInputs()
    outcome = _outcome(store, correct, study.settings)  # a refused --correct before anything else
    choice = choose_contrast(_store_subsets(store), contrast, study.settings.subsets)
    human_rater, judge_rater = _human_rater(store, human), _judge_rater(store, judge)
    # before the cells frame: its queries over every answer and score fill DuckDB's buffer pool,
    # which the frame's lowered limit then empties (after it, they would add to the frame's memory)
    facts = provenance.provenance(store)
    cells = Cells(store, human_rater.value, judge_rater.value, outcome)
    titled = _titled(store)
    rules = rule_metrics.rule_cells(store, cells, by)  # a refused --by before anything is built
    built = {"human_rater": human_rater, "judge_rater": judge_rater, "outcome": _named_outcome(outcome),
             "provenance": facts,
             **_sections(store, cells, choice.pair, (human_rater.value, judge_rater.value, titled), rules)}
    order = labels.model_order(built["overall"])
    parts, left_out = study_parts.build(store, cells, order, study)  # each a Section, or none
    regimes = rule_metrics.regimes(built["outcome"], human_rater.value, judge_rater.value, rules)
    built.update(parts, **rule_metrics.build(rules, by, regimes, order))
    if choice.missing:  # the overview's one line: no subsets at all, or no pair the report could pick
        built["without_subsets" if choice.missing == NO_SUBSETS else "without_contrast"] = choice.missing
    core = absent.core_sections(overall=built["overall"], judge_rater=judge_rater.value, titled=titled,
                                contrast=choice.pair, without_subsets=built.get("without_subsets"),
                                regimes=built["regimes"])
    return Report.of(**built, not_in_report=[*core, *left_out])


def _named_outcome(outcome: Outcome | None) -> str | None:
    """The outcome as report.json names it: OMITTED under labels (the paper's report keeps its keys)."""
    if outcome is None or not outcome.labels:
        return str(outcome) if outcome else None
    return OMITTED


def _sections(store, cells, contrast, shape, rules) -> dict[str, Any]:
    """The accuracy sections count right answers under the outcome (``cells``' ``human``
    column); agreement, κ and metric validity compare with the labels whatever the outcome.
    ``contrast``: the (documented, undocumented) pair, or None: no section compares subsets;
    ``shape``: the human and the judge rater (or None) and whether any item has a title;
    ``rules``: the rule metrics' values (:func:`contam.harness.report.parts.rule_metrics.rule_cells`)."""
    human, judge, titled = shape
    scored = human if cells.outcome.labels else str(cells.outcome)
    overall = labels.overall(cells) if scored else None
    judge_rows = labels.judge(cells, overall) if judge else None
    frame, order = cells.frame(), labels.model_order(overall)
    labelled = cells.labelled()
    gap = noted(lambda n: labels.gap(cells, contrast, notes=n)) if scored and contrast else Section(None)
    every = _every_model(order, frame)
    regimes = surface.regimes(frame, every, overall, judge_rows)
    by_labels = human and cells.outcome.labels  # rank correlation is with the human ranking
    return {
        "contrast": {"documented": contrast[0], "undocumented": contrast[1]} if contrast else None,
        "overall": overall,
        "per_title": labels.per_title(cells, order, contrast or ()) if scored and titled else None,
        "gap": gap, "judge": judge_rows,
        "agreement": labels.agreement(labelled, order) if human and judge else None,
        "rank_correlation": noted(lambda n: surface.rank_correlation(regimes, n)) if by_labels else None,
        "metric_validity": _metric_validity(labelled, contrast, order, rules) if human else None,
        **_extras(store, cells, frame, contrast, (scored, judge), regimes, every),
        **_across_models(gap.value, frame, contrast, order)}


def _metric_validity(labelled: Cells, contrast, order: list[str], rules) -> Section:
    """Each surface metric's validity against the human labels, and each rule metric's beside it."""
    surface_part = noted(lambda n: surface.metric_validity(labelled.frame(), contrast or (), order, n))
    if not rules.present:
        return surface_part
    return Section({**(surface_part.value or {}), **rule_metrics.validity(rules, contrast or (), order)},
                   surface_part.notes)


def _every_model(order: list[str], frame: pd.DataFrame) -> list[str]:
    """Every model: those the human rater labelled in human order, then the others by name."""
    return order + sorted(set(frame["model"].unique()) - set(order))


def _extras(store, cells, frame, contrast, raters, regimes, order) -> dict[str, Any]:
    """The sections beyond the report contract; ``order``: every model (:func:`_every_model`)."""
    human, judge = raters
    missing = labels.missing(cells, order)
    return {
        "judge_gap": noted(lambda n: labels.gap(cells, contrast, "judge", n)) if judge and contrast else None,
        "surface_by_subset": noted(lambda n: surface.surface_by_subset(frame, order, contrast, n))
        if contrast else None,
        "regimes": regimes,
        "mcnemar": labels.mcnemar(frame, contrast or (), order) if human else None,
        "inter_annotator": noted(lambda n: labels.inter_annotator(store, n)),
        "abstention": labels.abstention(cells, order, contrast or ()) if human else None,
        "missing": Section(missing, _missing_notes(missing, human)),
        "answer_length": labels.answer_length(cells, order),
        "meta": _meta(store, frame, raters),
        **_probes_and_validation(store, cells, contrast),
    }


def _probes_and_validation(store, cells, contrast) -> dict[str, Any]:
    """The probes section, and the Probe validation that reads its parts (ts-guess's fill
    check is counted once, there)."""
    built = noted(lambda n: probes.build(store, contrast or PAPER_CONTRAST, n))  # none: no rows of its own
    return {"probes": built, "validation": validation.build(store, cells.outcome, built.value)}


def _across_models(gap: list[dict] | None, frame, contrast, order) -> dict[str, Any]:
    """The contamination effect pooled over models (needs human labels, as the gap does)."""
    if not gap:
        return {"cmh": None, "logistic": None}
    return {"cmh": noted(lambda n: contamination.cmh(gap, n)),
            "logistic": noted(lambda n: contamination.logistic(frame, contrast, order, n))}


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
    if not _any_rows(store, "items"):
        raise UserError(f"{store.path}: the store has no items; import items first")
    if not any(_any_rows(store, table) for table in ("answers", "labels", "probe_scores")):
        raise UserError(f"{store.path}: the store has no answers or labels (nor probe scores) to "
                        "report on")


def _any_rows(store: Store, table: str) -> bool:
    """Whether ``table`` has a row (its latest_ view has one then): counting a latest_ view would
    work its window over every row."""
    return store.query(f"SELECT EXISTS (SELECT 1 FROM {table})")[0][0]


def _titled(store: Store) -> bool:
    return bool(store.query("SELECT count(*) FROM latest_items WHERE title IS NOT NULL AND title <> ''")[0][0])


def _store_subsets(store: Store) -> list[str]:
    return [r[0] for r in store.query(
        "SELECT DISTINCT subset FROM latest_items WHERE subset IS NOT NULL AND subset <> '' ORDER BY 1")]


def _raters(store: Store, where: str) -> list[tuple[str, int]]:
    return [tuple(r) for r in store.query(
        f"SELECT rater, count(*) FROM latest_labels WHERE {where} GROUP BY rater ORDER BY rater")]


def _human_rater(store: Store, wanted: str | None) -> Section[str | None]:
    return _chosen_rater(store, HUMAN_RATER_SQL, "human", wanted, "accuracy uses")


def _judge_rater(store: Store, wanted: str | None) -> Section[str | None]:
    return _chosen_rater(store, JUDGE_RATER_SQL, "judge", wanted, "using")


def _chosen_rater(store: Store, sql: str, side: str, wanted: str | None, use: str) -> Section[str | None]:
    """``wanted``, else the ``side`` (human or judge) rater who labelled the most cells (ties:
    the first by name), with a note naming the others."""
    counted = _raters(store, sql)
    names = [r for r, _ in counted]
    if wanted:
        if wanted not in names:
            raise UserError(f"--{side} {wanted!r}: no such rater ({side} raters: {', '.join(names) or 'none'})")
        return Section(wanted)
    if not names:
        return Section(None)
    chosen = min(counted, key=lambda r: (-r[1], r[0]))[0]
    if len(names) == 1:
        return Section(chosen)
    return Section(chosen, (Note(f"{side}_rater", f"several {side} raters ({', '.join(names)}); "
                                 f"{use} {chosen!r}, the one with most labels (choose with --{side})"),))


# -- what the figures show, and the report's own facts ------------------------------------------

def figure_regime(report: Report) -> str | None:
    """What figures 1 and 2 show: ``human`` accuracy when human labels exist, else the best
    regime available — ``judge`` accuracy, else ``surface`` metric means — else None."""
    if report.overall:
        return "human"
    if report.judge:
        return "judge"
    return "surface" if report.surface_by_subset else None


def _meta(store: Store, frame: pd.DataFrame, raters: tuple[str | None, str | None]) -> Section[dict]:
    """The report's own facts, the models a rater left unlabelled (with their notes), the coverage."""
    unlabelled = _unlabelled(frame, raters)
    notes = tuple(Note(f"unlabelled.{side}", _unlabelled_reason(raters, side, models))
                  for side, models in unlabelled.items() if models)
    return Section({**_facts(store, frame), "unlabelled": unlabelled, "raters": _coverage(store)}, notes)


def _facts(store: Store, frame: pd.DataFrame) -> dict[str, Any]:
    return {"store": str(store.path), "generated_at": utc_now().isoformat(timespec="seconds") + "Z",
            "harness_version": __version__, "items": int(frame["item_seq"].nunique()),
            "models": int(frame["model"].nunique()), "cells": len(frame)}


def _coverage(store: Store) -> dict[str, dict[str, int]]:
    """How many cells each rater labelled, per side: ``{"human": {rater: cells}, "judge": {...}}``."""
    return {side: dict(_raters(store, where))
            for side, where in (("human", HUMAN_RATER_SQL), ("judge", JUDGE_RATER_SQL))}


# -- notes --------------------------------------------------------------------------------------

_SIDE_SECTIONS = {"human": "accuracy, the gap, McNemar and the tests across models",
                  "judge": "the judge's accuracy and gap and the human × judge agreement"}


def _unlabelled(frame: pd.DataFrame, raters: tuple[str | None, str | None]) -> dict[str, list[str]]:
    """Per side (``human``, ``judge``), the models that side's rater labelled nowhere: they are
    left out of its statistics (McNemar and the paired tests included), named here and in a note."""
    result = {}
    for side, rater in zip(("human", "judge"), raters):
        labelled = set(frame.loc[frame[side].notna(), "model"])
        result[side] = sorted(set(frame["model"]) - labelled) if rater else []
    return result


def _unlabelled_reason(raters: tuple[str | None, str | None], side: str, models: list[str]) -> str:
    rater = raters[0] if side == "human" else raters[1]
    return (f"{rater!r} labelled no answer of {', '.join(models)}: left out of "
            f"{_SIDE_SECTIONS[side]}; label them to include them")


def _missing_notes(missing: list[dict], human: str | None) -> tuple[Note, ...]:
    """One note per model with missing data: what was counted as wrong or left out."""
    notes = []
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
            notes.append(Note(f"missing.{r['model']}", "; ".join(parts)))
    return tuple(notes)
