"""The study sections of report.md / report.html and their tables (the same Table objects become
``tables/NAME.tex``; :data:`TIDY` gives ``tables/NAME.csv`` their numbers): Exposure, the
before/after-cut-off contrast, and the ordered tiers. Each appears only where the report has its
part (:mod:`contam.harness.report.parts.study`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contam.harness.report.inputs.correct import source_sentence
from contam.harness.report.model import Report
from contam.harness.report.parts.exposure import FIGURE
from contam.harness.report.texts.format import (DASH, Section, Table, fmt_ci, fmt_num, fmt_or, fmt_p, fmt_pct, fmt_pp,
                                   is_missing, p_clause, plural, user)

__all__ = ["sections", "exposure_section", "cutoff_section", "tiers_section", "pooled_label", "TIDY"]


def sections(report: Report) -> list[Section]:
    built = [exposure_section(report), cutoff_section(report), tiers_section(report)]
    return [s for s in built if s is not None]


def _ratio(x: float | None) -> str:
    """An odds ratio: one decimal from 10 up, two below."""
    return DASH if is_missing(x) else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def _ratio_ci(row: dict) -> str:
    low, high = row.get("ci_low"), row.get("ci_high")
    return DASH if is_missing(low) or is_missing(high) else f"[{_ratio(low)}, {_ratio(high)}]"


def _range(low: float | None, high: float | None) -> str:
    return DASH if is_missing(low) or is_missing(high) else f"{fmt_num(low, 2)} to {fmt_num(high, 2)}"


def _settings_line(report: Report, what: str, key: str, column: str) -> str:
    """``Exposure: the item column `x` ([study] exposure; settings from ...).``"""
    origin = (report.study or {}).get("settings_from", "the config")
    return f"{what}: the item column {user(column)} (`[study] {key}`; settings from {user(origin)})."


# -- Exposure -------------------------------------------------------------------------------------

def exposure_section(report: Report) -> Section | None:
    part = report.exposure
    if not part:
        return None
    paragraphs = [_settings_line(report, "Exposure", "exposure", part["column"]),
                  source_sentence(part["correct"]),
                  "Per model, a logistic regression of correct on exposure: the odds ratio per unit of "
                  "exposure with its 95% Wald interval, the Wald p and the likelihood-ratio p (against "
                  "the intercept-only model)."]
    if part.get("pooled"):
        paragraphs.append(_pooled_reading(part["pooled"]))
    tables = [_exposure_table(part), _quintile_table(part)] if part["quintiles"] else [_exposure_table(part)]
    return Section("Exposure", paragraphs, tables, figures=[FIGURE] if part["quintiles"] else [])


def _pooled_reading(fit: dict) -> str:
    models = fit["models"]
    fixed = (f"a fixed effect for each of the {len(models)} models" if len(models) > 1 else
             f"one model, {user(models[0])}: its own fit with item-clustered errors")
    head = (f"**Pooled** ({fit['formula']}, {fixed}; {fit['n']} cells on {fit['items']} items; standard errors "
            f"clustered by item, small-sample correction {fit['cluster_correction']}, normal reference): ")
    if fit.get("reason"):
        return head + f"{fit['reason']}: no finite odds ratio."
    return head + (f"odds ratio per unit of exposure {_ratio(fit['odds_ratio'])}, 95% CI {_ratio_ci(fit)}, "
                   f"{p_clause(fit['wald_p'])} (Wald).")


def pooled_label(fit: dict) -> str:
    """The pooled row's name: a fixed effect per model, or with one model that model's own fit."""
    if len(fit["models"]) == 1:
        return f"{fit['models'][0]} (item-clustered fit)"
    return "pooled (model fixed effects)"


def _exposure_table(part: dict) -> Table:
    rows = [[r["model"], str(r["n"]), str(r["right"]), _range(r["exposure_min"], r["exposure_max"]),
             _ratio(r["odds_ratio"]), _ratio_ci(r), fmt_p(r["wald_p"]), fmt_p(r["lr_p"]), r["reason"] or ""]
            for r in part["per_model"]]
    pooled = part.get("pooled")
    if pooled:
        rows.append([pooled_label(pooled), str(pooled["n"]), DASH, DASH, _ratio(pooled["odds_ratio"]),
                     _ratio_ci(pooled), fmt_p(pooled["wald_p"]), DASH,
                     pooled.get("reason") or "item-clustered standard errors"])
    return Table(["Model", "n", "Right", "Exposure range", "Odds ratio per unit", "95% CI", "Wald p", "LR p",
                  "Note"], rows, f"Logistic regression of correct on {part['column']}, per model and pooled.",
                 "exposure_by_model")


def _quintile_table(part: dict) -> Table:
    rows = [[r["model"], str(r["quintile"]), _range(r["exposure_low"], r["exposure_high"]),
             fmt_num(r["exposure_mean"], 2), str(r["n"]), fmt_pct(r["accuracy"]), fmt_ci(r["ci_low"], r["ci_high"])]
            for r in part["quintiles"]]
    return Table(["Model", "Quintile", "Exposure", "Mean exposure", "n", "Accuracy", "95% CI (Wilson)"], rows,
                 f"Accuracy in the items' quintiles of {part['column']} (fewer bins where values tie).",
                 "exposure_quintiles")


# -- the cut-off ----------------------------------------------------------------------------------

def cutoff_section(report: Report) -> Section | None:
    part = report.cutoff
    if part is None:
        return None
    paragraphs = [_settings_line(report, "Release date", "released", part["column"]),
                  "Each model's accuracy on the items released on or before its training cut-off "
                  "(`[[models]] cutoff`) against those released after it: Wilson intervals per side, "
                  "Newcombe's hybrid score interval of the difference (before − after), the odds ratio "
                  "and Fisher's two-sided exact p, Holm-adjusted across models.",
                  source_sentence(part["correct"])]
    return Section("Before and after the training cut-off", paragraphs, [_cutoff_table(part)])


def _side(row: dict, side: str) -> str:
    return f"{fmt_pct(row[f'{side}_accuracy'])} ({row[f'{side}_right']}/{row[f'{side}_n']})"


def _cutoff_table(part: dict) -> Table:
    rows = [[r["model"], r["cutoff"], _side(r, "before"), fmt_ci(r["before_ci_low"], r["before_ci_high"]),
             _side(r, "after"), fmt_ci(r["after_ci_low"], r["after_ci_high"]), fmt_pp(r["difference"]),
             fmt_ci(r["difference_ci_low"], r["difference_ci_high"]), fmt_or(r["odds_ratio"]),
             fmt_p(r["fisher_p"]), fmt_p(r["fisher_p_holm"])] for r in part["per_model"]]
    return Table(["Model", "Cut-off", "Before", "95% CI (before)", "After", "95% CI (after)", "Difference",
                  "95% CI (Newcombe)", "Odds ratio", "Fisher p", "Holm p"], rows,
                 "Items released on or before the model's cut-off vs after it; Holm p within the family "
                 f"{_holm_family(part)}.", "cutoff_by_model")


def _holm_family(part: dict) -> str:
    return part["per_model"][0]["holm_family"] if part["per_model"] else ""


# -- ordered tiers ----------------------------------------------------------------------------------

def tiers_section(report: Report) -> Section | None:
    part = report.tiers
    if not part:
        return None
    order = " → ".join(map(user, part["subsets"]))
    paragraphs = [f"Tiers in the order listed in `[study] subsets`: {order}.",
                  source_sentence(part["correct"]),
                  "Cochran–Armitage test for a linear trend in accuracy across the tiers (scores 0, 1, 2, "
                  "... in the listed order; Z > 0: accuracy rises along the list), two-sided p."]
    return Section("Accuracy across ordered tiers", paragraphs, [_tier_table(part), _trend_table(part)])


def _tier_table(part: dict) -> Table:
    cell = {(r["model"], r["subset"]): r for r in part["per_tier"]}
    models = list(dict.fromkeys(r["model"] for r in part["per_tier"]))
    rows = [[m, *(_tier_cell(cell[(m, t)]) for t in part["subsets"])] for m in models]
    return Table(["Model", *part["subsets"]], rows, "Strict accuracy [95% Wilson interval] (right/n) per tier.",
                 "tiers_by_model")


def _tier_cell(r: dict) -> str:
    return f"{fmt_pct(r['accuracy'])} {fmt_ci(r['ci_low'], r['ci_high'])} ({r['right']}/{r['n']})"


def _trend_table(part: dict) -> Table:
    rows = [[r["model"], str(r["tiers"]), str(r["n"]), fmt_num(r["z"], 2), fmt_num(r["chi2"], 2), fmt_p(r["p"])]
            for r in part["trend"]]
    return Table(["Model", "Tiers", "n", "Z", "χ² (1 df)", "p"], rows,
                 f"Cochran–Armitage trend test per model ({plural(len(rows), 'test')}).", "tiers_trend")


# -- tidy numbers for tables/*.csv --------------------------------------------------------------------

def _exposure_rows(report: Report) -> list[dict[str, Any]]:
    part = report.exposure
    if not part:
        return []
    rows = [{"scope": "model", "column": part["column"], **r} for r in part["per_model"]]
    if part.get("pooled"):
        pooled = {k: v for k, v in part["pooled"].items() if k != "models"}
        rows.append({"scope": "pooled", "column": part["column"], "model": None, **pooled,
                     "model_list": "; ".join(part["pooled"]["models"])})
    return rows


def _rows(part: str, key: str, drop: tuple[str, ...] = ()) -> Callable[[Report], list[dict[str, Any]]]:
    return lambda report: [{k: v for k, v in r.items() if k not in drop}
                           for r in (getattr(report, part) or {}).get(key) or []]


TIDY: dict[str, Callable[[Report], list[dict[str, Any]]]] = {
    "exposure_by_model": _exposure_rows,
    "exposure_quintiles": _rows("exposure", "quintiles"),
    "cutoff_by_model": _rows("cutoff", "per_model", ("holm_family",)),
    "tiers_by_model": _rows("tiers", "per_tier"),
    "tiers_trend": _rows("tiers", "trend"),
}
