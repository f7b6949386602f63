"""Two report sections beyond the paper: the contamination effect pooled over models (CMH,
Breslow–Day, the logistic model), each with a one-line reading in words, and the provenance of
the numbers (runs, hashes, served model ids, attempts, scoring parameters)."""

from __future__ import annotations

from harness.report.format import (DASH, Section, Table, fmt_num, fmt_p, fmt_params,
                                   is_missing, p_clause, user)

__all__ = ["contamination_section", "provenance_section"]

ALPHA = 0.05  # the level at which a reading says "differs" rather than "no evidence that it differs"


def _ratio(x: float | None) -> str:
    """An odds ratio: one decimal from 10 up, two below (0.38, 4.41, 45.5)."""
    return DASH if is_missing(x) else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def _ratio_ci(r: dict, prefix: str = "") -> str:
    low, high = r[f"{prefix}ci_low"], r[f"{prefix}ci_high"]
    return DASH if is_missing(low) or is_missing(high) else f"[{_ratio(low)}, {_ratio(high)}]"


# -- contamination across models ----------------------------------------------------------------

def contamination_section(report: dict) -> Section | None:
    cmh, logistic = report.get("cmh"), report.get("logistic")
    if not cmh and not logistic:
        return None
    paragraphs, tables = [], []
    if cmh:
        paragraphs += [_cmh_reading(cmh, report["contrast"]), _breslow_day_reading(cmh)]
    if logistic:
        paragraphs.append(_logistic_reading(logistic, cmh))
        tables.append(_logistic_table(logistic))
    return Section("Contamination across models", paragraphs, tables)


def _cmh_reading(cmh: dict, contrast: dict) -> str:
    odds = (f"has {_ratio(cmh['odds_ratio'])} times the odds of a right answer of one of the "
            f"undocumented subset ({user(contrast['undocumented'])})")
    test = (f"Mantel–Haenszel odds ratio {_ratio(cmh['odds_ratio'])}, 95% CI {_ratio_ci(cmh)} (Robins–"
            f"Breslow–Greenland variance); Cochran–Mantel–Haenszel χ² = {fmt_num(cmh['cmh_statistic'], 1)} "
            f"(1 df, no continuity correction), {p_clause(cmh['cmh_p'], cmh.get('cmh_log10_p'))}")
    if len(cmh["models"]) == 1:
        return (f"**One model** ({user(cmh['models'][0])}): an item of the documented subset "
                f"({user(contrast['documented'])}) {odds}. {test}. With one model this is that model's own "
                "odds ratio: pooling over models needs at least two.")
    return (f"**Pooled over the {len(cmh['models'])} models**, an item of the documented subset "
            f"({user(contrast['documented'])}) {odds}: {test}.")


def _breslow_day_reading(cmh: dict) -> str:
    question = "**Does the gap differ between models?**"
    if len(cmh["models"]) == 1:
        return f"{question} Asking needs at least two models; this report has one."
    p = cmh.get("breslow_day_p")
    if is_missing(p):
        return f"{question} The Breslow–Day test is not available here (see Notes)."
    verdict = ("yes: the odds ratios differ between models, so the pooled figure averages unequal gaps"
               if p < ALPHA else "no evidence that the odds ratios differ between models")
    return (f"{question} Breslow–Day test of equal odds ratios with Tarone's correction: "
            f"χ² = {fmt_num(cmh['breslow_day_statistic'], 1)} ({cmh.get('breslow_day_df', '?')} df), "
            f"{p_clause(p, cmh.get('breslow_day_log10_p'))}; {verdict}.")


def _standard_errors(fit: dict) -> str:
    if fit.get("covariance") == "model-based":
        return "model-based standard errors (the item-clustered covariance is singular, see Notes)"
    return (f"standard errors clustered by item (small-sample correction {fit.get('cluster_correction')} "
            "for G items, N answers and K coefficients; normal reference distribution)")


def _logistic_reading(fit: dict, cmh: dict | None) -> str:
    effect = (f"odds ratio documented vs undocumented {_ratio(fit['documented_odds_ratio'])}, 95% CI "
              f"{_ratio_ci(fit, 'documented_')}, {p_clause(fit['documented_p'])}")
    head = (f"**Logistic model** {fit['formula']} on {fit['n']} answers to {fit['items']} items, "
            f"{_standard_errors(fit)}: ")
    if fit.get("models", 2) == 1:
        return head + f"the {effect} (one model: whether the gap differs between models needs at least two)."
    if not fit["interaction"]:
        return head + (f"the common {effect}, holding the model fixed (right ~ subset * model has no "
                       "finite estimate on these data: perfect separation, see Notes)."
                       + _heterogeneity_warning(cmh))
    p = fit["interaction_wald_p"]
    verdict = "the gap differs between models" if not is_missing(p) and p < ALPHA else \
        "no evidence that the gap differs between models"
    terms = "interaction term" if fit["interaction_wald_df"] == 1 else f"{fit['interaction_wald_df']} interaction terms"
    return (head + f"for the reference model {user(fit['reference_model'])} the {effect}; the Wald "
            f"test of the {terms} gives χ² = "
            f"{fmt_num(fit['interaction_wald_statistic'], 1)}, {p_clause(p)}: {verdict}.")


def _heterogeneity_warning(cmh: dict | None) -> str:
    """A common odds ratio is a fair summary only when the models' odds ratios are alike."""
    p = (cmh or {}).get("breslow_day_p")
    if is_missing(p) or p >= ALPHA:
        return ""
    return (f" **Caution**: the Breslow–Day test rejects equal odds ratios "
            f"({p_clause(p, cmh.get('breslow_day_log10_p'))}), so this common odds ratio averages gaps "
            "that differ between models; read each model's own odds ratio in the contamination gap table.")


def _logistic_table(fit: dict) -> Table:
    rows = [[t["term"], _ratio(t["odds_ratio"]), _ratio_ci(t), fmt_p(t["p"])] for t in fit["terms"]]
    against = "" if fit.get("models", 2) == 1 else f"the reference model {fit['reference_model']} and "
    return Table(["Term", "Odds ratio", f"95% CI ({fit.get('covariance', 'item-clustered')})", "p"], rows,
                 f"Logistic regression {fit['formula']}; odds ratios against {against}the undocumented subset.")


# -- provenance ---------------------------------------------------------------------------------

def provenance_section(report: dict) -> Section | None:
    prov = report.get("provenance")
    if not prov:
        return None
    paragraphs = [f"contam {user(prov['contam_version'] or 'version unknown')}; store "
                  f"{user(prov['store'])}. Hashes are sha256 of the stored run config, and of the "
                  "system prompt and question template (answering runs) or of the judge rubric (judge runs)."]
    tables = [t for t in (_runs_table(prov), _models_table(prov), _raters_table(prov), _scoring_table(prov)) if t]
    return Section("Provenance", paragraphs, tables)


def _runs_table(prov: dict) -> Table | None:
    if not prov["runs"]:
        return None
    rows = [[r["run_id"], r["kind"] or DASH, r["started_at"] or DASH, r["finished_at"] or "unfinished",
             r["config_sha256"], r["sha256"] or DASH] for r in prov["runs"]]
    return Table(["Run", "Kind", "Started (UTC)", "Finished (UTC)", "Config sha256", "Prompt / rubric sha256"],
                 rows, "Every run recorded in the store.")


def _models_table(prov: dict) -> Table | None:
    if not prov["models"]:
        return None
    rows = [[m["model"], m["provider"] or DASH, ", ".join(m["requested"]) or DASH, _served(m["served"]),
             "; ".join(fmt_params(p) or "provider defaults" for p in m["sampling"]) or DASH,
             str(m["answers"]), *_attempt_cells(m["attempts"])] for m in prov["models"]]
    return Table(["Model", "Provider", "Requested id", "Served ids (answers)", "Sampling", "Answers",
                  "Attempts", "Retries", "Failed attempts"], rows,
                 "Per answering model; attempts of judge runs are not counted here.")


def _served(served: list[dict]) -> str:
    return "; ".join(f"{s['id']} ({s['answers']})" for s in served) or DASH


def _attempt_cells(attempts: dict) -> list[str]:
    failures = ", ".join(f"{outcome} {n}" for outcome, n in attempts["failures"].items())
    return [str(attempts["attempts"]), str(attempts["retries"]),
            f"{attempts['failed']} ({failures})" if failures else "0"]


def _raters_table(prov: dict) -> Table | None:
    if not prov["raters"]:
        return None
    rows = [[r["rater"], str(r["labels"]), ", ".join(r["rubric_sha256"]) or DASH,
             ", ".join(r["sources"]) or DASH, ", ".join(r["run_ids"]) or DASH] for r in prov["raters"]]
    return Table(["Rater", "Labels", "Rubric sha256", "Imported from", "Judge runs"], rows)


def _scoring_table(prov: dict) -> Table | None:
    if not prov["scoring"]:
        return None
    rows = [[s["metric"], str(s["scores"]), fmt_params(s["params"]) or DASH] for s in prov["scoring"]]
    return Table(["Metric", "Scores", "Parameters"], rows, "Scoring parameters as stored with each score.")
