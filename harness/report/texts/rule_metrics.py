"""The sections of :mod:`contam.harness.report.parts.rule_metrics` as report tables (Markdown, HTML, LaTeX)
and their numbers as tidy rows (``tables/*.csv``): accuracy under each rule metric beside the
human and judge accuracy, the rule metrics' agreement with the human labels, and accuracy by an
item column (``--by``)."""

from __future__ import annotations

import re
from typing import Any

from contam.harness.report.inputs.correct import correct_heading
from contam.harness.report.model import Report
from contam.harness.report.texts.format import DASH, Section, Table, fmt_ci, fmt_num, fmt_pct, user
from contam.harness.report.parts.rule_metrics import RULE_METRICS

__all__ = ["sections", "tidy", "by_table_name"]

_RATERS = {"human": "Human", "judge": "LLM judge"}
_COUNTING = ("An empty answer or an unanswered item counts as wrong under every regime; a "
             "non-empty answer a metric could not score (no number in the reference, say) or did "
             "not score yet is left out of that metric's n.")


def sections(report: Report) -> list[Section]:
    """The rule metrics' accuracy and agreement, then the --by breakdown, where each has data."""
    built = [_rule_section(report), _by_section(report)]
    return [section for section in built if section is not None]


def _cell(r: dict | None) -> str:
    """``73.3% [55.6, 85.8] (22/30)``; a dash without data."""
    if not r or not r.get("n"):
        return DASH
    return f"{fmt_pct(r['accuracy'])} {fmt_ci(r['ci_low'], r['ci_high'])} ({r['right']}/{r['n']})"


def _regime_name(regime: str, report: Report) -> str:
    if regime == "outcome":
        return f"correct = {report.outcome}"
    return _RATERS.get(regime) or RULE_METRICS.get(regime, regime)


# -- accuracy and agreement by rule metric ------------------------------------------------------

def _rule_section(report: Report) -> Section | None:
    rows = report.rule_accuracy
    if not rows:
        return None
    metrics = report.rule_metrics
    raters = [(key, rows) for key, rows in (("overall", report.overall), ("judge", report.judge)) if rows]
    by_model: dict[str, dict[str, dict]] = {}
    for row in rows:
        by_model.setdefault(row["model"], {})[row["metric"]] = row
    headers = ["Model", *(correct_heading(report) if key == "overall" else "LLM judge" for key, _ in raters),
               *(RULE_METRICS[m] for m in metrics)]
    body = [[model, *(_cell(_find(rater_rows, model)) for _, rater_rows in raters),
             *(_cell(cells.get(m)) for m in metrics)] for model, cells in by_model.items()]
    tables = [Table(headers, body, "Strict accuracy [95% Wilson interval] (right/n) per regime.",
                    "rule_accuracy")]
    agreement = _agreement_table(report, metrics)
    return Section("Accuracy by rule metric", [_COUNTING], tables + ([agreement] if agreement else []))


def _find(rows: list[dict], model: str) -> dict | None:
    return next((r for r in rows if r["model"] == model), None)


def _agreement_rows(report: Report, metrics: list[str]) -> list[dict[str, Any]]:
    validity = report.metric_validity or {}
    rows = []
    for metric in metrics:
        if validity.get(metric):
            rows += [{"metric": metric, "scope": "model", **r} for r in validity[metric]["per_model"]]
            rows.append({"metric": metric, "scope": "pooled", "model": None, **validity[metric]["pooled"]})
    return rows


def _agreement_table(report: Report, metrics: list[str]) -> Table | None:
    rows = _agreement_rows(report, metrics)
    if not rows:
        return None
    body = [[RULE_METRICS[r["metric"]], r["model"] or "pooled", str(r["n"]), fmt_pct(r["agreement"]),
             fmt_num(r["kappa"]), fmt_pct(r["sensitivity"]), fmt_pct(r["specificity"])] for r in rows]
    return Table(["Metric", "Model", "n", "Agreement", "Cohen's κ", "Sensitivity", "Specificity"], body,
                 "Each rule metric's right / not-right call against the human 'right' label, over the "
                 "labelled answers it scored: sensitivity is the share of human-right answers it calls "
                 "right, specificity the share of the others it calls wrong.", "rule_agreement")


# -- accuracy by an item column -----------------------------------------------------------------

def by_table_name(column: str) -> str:
    return "accuracy_by_item_" + (re.sub(r"[^a-z0-9]+", "_", column.lower()).strip("_") or "column")


def _by_section(report: Report) -> Section | None:
    by = report.by
    if not by:
        return None
    heading = f"Accuracy by {by['column']}"
    if not by["rows"]:
        return Section(heading, ["No labels and no rule-metric scores in the store: nothing to break "
                                 "down."])
    cells: dict[tuple, dict[str, dict]] = {}
    for row in by["rows"]:
        cells.setdefault((row["value"], row["items"], row["model"]), {})[row["regime"]] = row
    body = [[DASH if value is None else str(value), str(items), model,
             *(_cell(regimes.get(r)) for r in by["regimes"])]
            for (value, items, model), regimes in cells.items()]
    headers = [by["column"], "Items", "Model", *(_regime_name(r, report) for r in by["regimes"])]
    return Section(heading, [f"Strict accuracy per value of the item column {user(by['column'])}, "
                             "per model and regime, in the order the values first occur. " + _COUNTING],
                   [Table(headers, body, "Strict accuracy [95% Wilson interval] (right/n).",
                          by_table_name(by["column"]))])


# -- tidy rows ----------------------------------------------------------------------------------

def tidy(report: Report) -> dict[str, list[dict[str, Any]]]:
    """The numbers of this module's tables, by table name."""
    tables = {}
    if report.rule_accuracy:
        tables["rule_accuracy"] = [dict(r) for r in report.rule_accuracy]
    agreement = _agreement_rows(report, report.rule_metrics or [])
    if agreement:
        tables["rule_agreement"] = [{k: v for k, v in r.items() if k in _AGREEMENT_KEYS}
                                    for r in agreement]
    by = report.by
    if by and by["rows"]:
        tables[by_table_name(by["column"])] = [{"column": by["column"], **r} for r in by["rows"]]
    return tables


_AGREEMENT_KEYS = ("metric", "scope", "model", "n", "n_right", "agreement", "kappa", "sensitivity",
                   "specificity", "roc_auc", "point_biserial_r")
