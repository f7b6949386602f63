"""A report section beyond the paper: the contamination effect pooled over models (CMH,
Breslow–Day, the logistic model), each with a one-line reading in words that names the test's
variant (continuity and Tarone's corrections, the interval's method, the clustered errors'
small-sample correction). The provenance section is :mod:`contam.harness.report.texts.provenance`."""

from __future__ import annotations

from contam.harness.report.model import Report
from contam.harness.report.texts.format import DASH, Section, Table, fmt_num, fmt_p, is_missing, p_clause, user

__all__ = ["contamination_section"]

ALPHA = 0.05  # the level at which a reading says "differs" rather than "no evidence that it differs"


def _ratio(x: float | None) -> str:
    """An odds ratio: one decimal from 10 up, two below (0.38, 4.41, 45.5)."""
    return DASH if is_missing(x) else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def _ratio_ci(r: dict, prefix: str = "") -> str:
    low, high = r[f"{prefix}ci_low"], r[f"{prefix}ci_high"]
    return DASH if is_missing(low) or is_missing(high) else f"[{_ratio(low)}, {_ratio(high)}]"


# -- contamination across models ----------------------------------------------------------------

def contamination_section(report: Report) -> Section | None:
    cmh, logistic = report.cmh, report.logistic
    if not cmh and not logistic:
        return None
    paragraphs, tables = [], []
    if cmh:
        paragraphs += [_cmh_reading(cmh, report.contrast), _breslow_day_reading(cmh)]
    if logistic:
        paragraphs.append(_logistic_reading(logistic, cmh))
        tables.append(_logistic_table(logistic))
    return Section("Contamination across models", paragraphs, tables)


def _cmh_reading(cmh: dict, contrast: dict) -> str:
    odds = (f"has {_ratio(cmh['odds_ratio'])} times the odds of a right answer of one of the "
            f"undocumented subset ({user(contrast['undocumented'])})")
    test = (f"Mantel–Haenszel odds ratio {_ratio(cmh['odds_ratio'])}, 95% CI {_ratio_ci(cmh)} "
            "(Robins–Breslow–Greenland variance); Cochran–Mantel–Haenszel "
            f"χ² = {fmt_num(cmh['cmh_statistic'], 1)} (1 df, no continuity correction), "
            f"{p_clause(cmh['cmh_p'], cmh.get('cmh_log10_p'))}")
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
    df = fit["interaction_wald_df"]
    terms = "interaction term" if df == 1 else f"{df} interaction terms"
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
                 f"Logistic regression {fit['formula']}; odds ratios against {against}the undocumented subset.",
                 "logistic_terms")
