"""The report's sections, in order, and report.md: the seed paper's Tables 2-6 and more.

report.md, report.html (:mod:`contam.harness.report.writers.html`) and the CSV and LaTeX tables all come from the
one list :func:`sections` returns, so they never disagree. A user's or a model's text in a
paragraph goes through :func:`user`; every table cell is escaped by each renderer.
"""

from __future__ import annotations

from contam.harness.declare import flag_of
from contam.harness.jobs.options.report import ReportOptions
from contam.harness.labels import LABEL_NAMES, LABELS
from contam.harness.report.model import Report
from contam.harness.report.parts.absent import has_regimes
from contam.harness.report.analysis import METRICS, figure_regime
from contam.harness.report.inputs.correct import correct_heading, metric_outcome, names_outcome
from contam.harness.report.texts.format import (DASH, Section, Table, fmt_ci, fmt_num, fmt_or, fmt_p, fmt_pct,
                                   fmt_pp, fmt_sides, md_cell, plural, user)
from contam.harness.report.plots import exposure as exposure_figure
from contam.harness.report.plots import probes as probe_figures
from contam.harness.report.parts import probes
from contam.harness.report.texts import rule_metrics as rule_metric_texts
from contam.harness.report.texts import study as study_texts
from contam.harness.report.parts import validation
from contam.harness.report.texts.provenance import provenance_section
from contam.harness.report.texts.pooled import contamination_section
from contam.harness.report.parts.rule_metrics import RULE_METRICS
from contam.harness.report.texts.surface import surface_section

__all__ = ["sections", "render_markdown", "figure_caption", "note_heading"]

# (figure, regime) -> caption; the regime is what figures 1 and 2 show (analysis.figure_regime).
_CAPTIONS = {
    ("fig1_leaderboard", "human"): "Figure 1. Strict human-labelled accuracy over all items; bars are 95% "
                                   "Wilson intervals.",
    ("fig1_leaderboard", "judge"): "Figure 1. No human labels: LLM-judge strict accuracy over all items "
                                   "(not human accuracy); bars are 95% Wilson intervals.",
    ("fig1_leaderboard", "surface"): "Figure 1. No human or judge labels: mean BLEU-2 and BERTScore-F1 per "
                                     "model (score means, not accuracy); bars are 95% BCa bootstrap intervals.",
    ("fig2_contamination_gap", "human"): "Figure 2. Accuracy on the documented vs the undocumented subset, "
                                         "ordered by gap; bars are 95% Wilson intervals.",
    ("fig2_contamination_gap", "judge"): "Figure 2. No human labels: LLM-judge strict accuracy on the "
                                         "documented vs the undocumented subset, ordered by gap; bars are "
                                         "95% Wilson intervals.",
    ("fig2_contamination_gap", "surface"): "Figure 2. No human or judge labels: mean BERTScore-F1 and BLEU-2 "
                                           "on the documented vs the undocumented subset, ordered by the "
                                           "difference; bars are 95% BCa bootstrap intervals.",
    ("fig3_metric_disagreement", "human"): "Figure 3. The same answers under each scoring regime in the "
                                           "store, one panel each, models held in human-accuracy order; "
                                           "accuracy panels have 95% Wilson bars, score-mean panels 95% BCa "
                                           "bootstrap bars on their own scale.",
    ("fig4_per_title", "human"): "Figure 4. Strict human-labelled accuracy per title, titles grouped by "
                                 "subset (documented first); bars are 95% Wilson intervals.",
}


def figure_caption(name: str, report: Report) -> str:
    """The figure's caption; under a metric outcome it names it ("correct = contains")."""
    caption, outcome = _figure_caption(name, report), metric_outcome(report)
    if not outcome:  # labels (the paper's), or no outcome at all
        return caption
    plain = caption.replace("human-labelled ", "").replace("human-accuracy order", "accuracy order")
    return f"{plain} Correct = {outcome}."


def _outcome_line(report: Report) -> list[str]:
    """The report's first line under a metric outcome (or none)."""
    if not names_outcome(report):
        return []
    if report.outcome is None:
        return ["**correct = none**: no labels in the store and no rule metric among [scoring] "
                f"metrics; set `[study] correct` or give `{flag_of(ReportOptions, 'correct')}`."]
    return [f"**correct = {report.outcome}**: an answer is right when {report.outcome} "
            "says so, right or not (no partial credit); empty and unanswered answers are wrong."]


def _figure_caption(name: str, report: Report) -> str:
    regime = figure_regime(report)
    if name == "fig3_metric_disagreement" and regime != "human":
        return ("Figure 3. The same answers under each scoring regime in the store, one panel each, models "
                "in name order (no human labels); score-mean panels have 95% BCa bootstrap bars on their "
                "own scale.")
    return _CAPTIONS.get((name, regime)) or probe_figures.caption(name) or exposure_figure.caption(name) or validation.caption(name) or (
        f"{name}: nothing to draw (no labels or scores in the store).")


def sections(report: Report) -> list[Section]:
    """Every section that has data, in the paper's order; the notes say what was left out.

    Without human labels the sections that stand in for accuracy come first: the judge's (when
    there is a judge) and the surface metrics by subset, which then carry figures 1 and 2."""
    regime = figure_regime(report)
    leading = {"human": [_overall, _per_title, _gap], "judge": [_judge, _judge_gap]}.get(regime, [])
    builders = [_overview, *leading, contamination_section, study_texts.sections, surface_section,
                _mcnemar, _regimes, rule_metric_texts.sections,
                *([_judge] if regime == "human" else []), _agreement, _inter_annotator, _metric_validity,
                _abstention, _missing_data, probes.sections, validation.section, provenance_section, _notes,
                _not_in_report]
    built = [build(report) for build in builders]  # a Section, None, or a list (the probes')
    return [s for b in built for s in (b if isinstance(b, list) else [b]) if s is not None]


def _overview(report: Report) -> Section:
    meta = report.meta or {}
    return Section("contam report", [
        *_outcome_line(report),
        *_no_human_note(report),
        f"Store {user(meta.get('store', '?'))}: {_count(meta, 'items', 'item')}, "
        f"{_count(meta, 'models', 'model')}; "
        f"generated {meta.get('generated_at', '?')} (contam {meta.get('harness_version') or '?'}).",
        f"Human rater: {_rater(report, 'human')}. Judge rater: {_rater(report, 'judge')}. "
        + _contrast_line(report),
        "All intervals are 95%. Empty answers and unanswered items count as wrong (a lower bound); "
        "see Missing data."])


def _contrast_line(report: Report) -> str:
    contrast = report.contrast
    if not contrast:
        return report.without_subsets or report.without_contrast
    return (f"Contrast: {user(contrast['documented'])} (documented) vs {user(contrast['undocumented'])} "
            "(undocumented).")


def _rater(report: Report, side: str) -> str:
    """The rater's name, and the models it labelled nowhere (left out of its sections)."""
    missing = ((report.meta or {}).get("unlabelled") or {}).get(side) or []
    unlabelled = f" (no labels for {', '.join(map(user, missing))})" if missing else ""
    return user(report.rater(side) or "none") + unlabelled


def _count(meta: dict, key: str, word: str) -> str:
    return plural(meta[key], word) if isinstance(meta.get(key), int) else f"? {word}s"


_STAND_IN = {
    "judge": "Figures 1 and 2 show the LLM judge's strict accuracy instead, and say so: a judge's labels "
             "are not human labels.",
    "surface": "Figures 1 and 2 show mean BLEU-2 and BERTScore-F1 instead (score means, not accuracy), "
               "and the surface metrics by subset below carry the documented-vs-undocumented contrast.",
}


def _no_human_note(report: Report) -> list[str]:
    """The first thing a reader of a label-less report (the demo's) needs to know."""
    if report.human_rater or report.outcome:  # a metric outcome stands in for labels
        return []
    how = "accuracy sections need human labels: `contam import labels FILE`"
    if not report.judge_rater:
        how += "; the judge: `contam judge CONFIG`"
    stand_in = _STAND_IN.get(figure_regime(report))
    return [f"**No human labels in this store**: {how}.", *([stand_in] if stand_in else [])]


def _overall(report: Report) -> Section | None:
    if not report.overall:
        return None
    caption = (f"Correct = {report.outcome}: right or not, no partial credit."
               if names_outcome(report) else
               "Human annotation; partial credit counts a partially right answer as one half.")
    return Section("Overall accuracy", [], [_accuracy_table(report.overall, "accuracy_by_model",
                                                            caption)], figures=["fig1_leaderboard"])


def _accuracy_table(rows: list[dict], name: str, caption: str = "") -> Table:
    """Per-model label counts and accuracy: the human's (overall) and the judge's share this table."""
    body = [[r["model"], str(r["n"]), str(r["right"]), str(r["partial"]), str(r["wrong"]),
             fmt_pct(r["accuracy"]), fmt_ci(r.get("ci_low"), r.get("ci_high")), fmt_pct(r["partial_credit"])]
            for r in rows]
    return Table(["Model", "n", "Right", "Partial", "Wrong", "Strict accuracy", "95% CI", "Partial credit"],
                 body, caption, name)


def _per_title(report: Report) -> Section | None:
    if not report.per_title:
        return None
    titles = list(dict.fromkeys((r["title"], r["subset"]) for r in report.per_title))
    cell = {(r["model"], r["title"]): r for r in report.per_title}
    models = list(dict.fromkeys(r["model"] for r in report.per_title))
    rows = [[m] + [_title_cell(cell.get((m, t))) for t, _ in titles] for m in models]
    return Section("Per-title accuracy", [], [Table(
        ["Model"] + [t if s is None else f"{t} ({s})" for t, s in titles], rows, "Strict accuracy [95% Wilson interval].",
        "accuracy_by_title")],
        figures=["fig4_per_title"])


def _title_cell(r: dict | None) -> str:
    return DASH if r is None else f"{fmt_pct(r['accuracy'])} {fmt_ci(r['ci_low'], r['ci_high'])}"


def _gap(report: Report) -> Section | None:
    if not report.gap:
        return None
    return Section("The contamination gap", [], [_gap_table(report, report.gap, "gap_by_model")],
                   figures=["fig2_contamination_gap"])


def _judge_gap(report: Report) -> Section | None:
    """Only without human labels: then the judge's gap is the best accuracy contrast there is."""
    if not report.judge_gap:
        return None
    return Section("The contamination gap under the LLM judge", [
        f"Strict accuracy by subset under the judge's labels (rater {user(report.judge_rater)}), "
        "standing in for the human-labelled gap this store cannot give."],
        [_gap_table(report, report.judge_gap, "judge_gap_by_model")], figures=["fig2_contamination_gap"])


def _gap_table(report: Report, gap: list[dict], name: str) -> Table:
    doc, undoc = report.contrast["documented"], report.contrast["undocumented"]
    rows = [[r["model"], *fmt_sides(r, "right", "accuracy"), fmt_pp(r["gap"]),
             fmt_ci(r["gap_ci_low"], r["gap_ci_high"]), fmt_or(r["odds_ratio"]), fmt_p(r["fisher_p"]),
             fmt_p(r.get("fisher_p_holm"))] for r in gap]
    family = gap[0].get("holm_family", "") if gap else ""
    return Table(["Model", doc, undoc, "Gap", "95% CI (Newcombe)", "Odds ratio", "Fisher p", "Holm p"], rows,
                 "Ordered by gap. Odds ratio ad/bc and two-sided Fisher exact p on the 2×2 right / "
                 f"not-right table; Holm p is adjusted within the family {family}.", name)


def _mcnemar(report: Report) -> Section | None:
    if not report.mcnemar:
        return None
    rows = [[r["model_a"], r["model_b"], r["scope"], str(r["n"]), str(r["a_right"]), str(r["b_right"]),
             str(r["a_only"]), str(r["b_only"]), str(r["identical_labels"]), fmt_p(r["p"]),
             fmt_p(r.get("p_holm"))] for r in report.mcnemar]
    return Section("Pairwise model comparisons", [
        "Exact McNemar test on the same items (two-sided exact binomial p on the discordant pairs, not the "
        "mid-p): a small p means the two models' right / not-right records differ beyond chance. Holm p "
        "is the Holm-adjusted p within the "
        f"family {report.mcnemar[0].get('holm_family', '')}; read the adjusted p when several "
        "comparisons are made at once."], [Table(
            ["Model A", "Model B", "Items", "n", "A right", "B right", "A only", "B only",
             "Identical labels", "p", "Holm p"], rows, name="mcnemar_pairs")])


def _regimes(report: Report) -> Section | None:
    if not has_regimes(report.regimes):  # answer lengths alone: the table would be dashes
        return None
    rows = [[r["model"], fmt_pct(r["human_accuracy"]), fmt_pct(r["judge_accuracy"]),
             fmt_pct(r["judge_partial_credit"]), fmt_num(r["bleu2"]), fmt_num(r["bertscore_f1"]),
             fmt_num(r["mean_words"], 1)] for r in report.regimes]
    rho = report.rank_correlation or {}
    if any(v is not None for v in rho.values()):
        rows.append([f"Spearman ρ with {correct_heading(report, 'human')}", DASH, fmt_num(rho.get("judge")),
                     fmt_num(rho.get("judge_partial_credit")), fmt_num(rho.get("bleu2")),
                     fmt_num(rho.get("bertscore_f1")), DASH])
    return Section("Scoring regimes", [], [Table(
        ["Model", correct_heading(report), "LLM judge", "Judge (partial credit)", "BLEU-2", "BERTScore-F1",
         "Mean answer length (words)"], rows,
        "Each regime's aggregate per model; ρ across models, ties at average ranks.", "scoring_regimes")],
        figures=["fig3_metric_disagreement"])


def _judge(report: Report) -> Section | None:
    if not report.judge:
        return None
    leads = figure_regime(report) == "judge"
    return Section("LLM judge", [f"Rater {user(report.judge_rater)}."],
                   [_accuracy_table(report.judge, "judge_accuracy_by_model")],
                   figures=["fig1_leaderboard"] if leads else [])


def _agreement(report: Report) -> Section | None:
    agreement = report.agreement
    if not agreement:
        return None
    pooled = agreement["pooled"]
    names = [LABEL_NAMES[label] for label in LABELS]
    confusion = Table(["Human ↓ / Judge →", *names],
                      [[name, *map(str, row)] for name, row in zip(names, pooled["confusion"])],
                      f"Pooled human × judge confusion (n = {pooled['n']}).", "agreement_confusion")
    rows = [[r["model"], str(r["n"]), fmt_pct(r["exact"]), fmt_num(r["kappa"]), fmt_num(r["kappa_linear"]),
             fmt_num(r["kappa_binary"])] for r in [*agreement["per_model"], {"model": "pooled", **pooled}]]
    return Section("Human × judge agreement", [
        f"Pooled exact agreement {fmt_pct(pooled['exact'])} (Cohen's κ = {fmt_num(pooled['kappa'])}; "
        f"linearly weighted κ = {fmt_num(pooled['kappa_linear'])}; κ = {fmt_num(pooled['kappa_binary'])} "
        "on the collapsed right / not-right decision), over the cells both labelled, labels as given"
        f"{_imputed_clause(agreement.get('imputed'))}."],
        [confusion, Table(["Model", "n", "Exact", "κ", "κ linear", "κ right/not"], rows,
                          name="agreement_by_model")])


def _imputed_clause(imputed: int | None) -> str:
    if not imputed:
        return ""
    return (f"; {plural(imputed, 'cell')} with an imputed label (a blank answer or an unanswered item, "
            "wrong by the lower-bound rule, on either side) left out of κ")


def _inter_annotator(report: Report) -> Section | None:
    inter = report.inter_annotator
    if not inter:
        return None
    rows = [[r["rater_a"], r["rater_b"], str(r["n"]), fmt_pct(r["exact"]), fmt_num(r["kappa"]),
             fmt_num(r["kappa_linear"])] for r in inter["pairwise"]]
    return Section("Inter-annotator agreement", [
        f"Raters: {', '.join(map(user, inter['raters']))}. Fleiss' κ = {fmt_num(inter['fleiss_kappa'])} on the "
        f"{inter['n_all_raters']} cells every rater labelled."],
        [Table(["Rater A", "Rater B", "n", "Exact", "κ", "κ linear"], rows, name="inter_annotator_pairs")])


_VALIDITY_COLUMNS = (
    ("n", "n", lambda v: str(v)), ("ROC-AUC", "roc_auc", fmt_num), ("r_pb", "point_biserial_r", fmt_num),
    ("Mean (right)", "mean_right", fmt_num), ("Mean (not right)", "mean_not_right", fmt_num),
    ("Right scoring 0", "zero_share_right", fmt_pct), ("Right below 0.5", "below_half_share_right", fmt_pct),
    ("r(length, score)", "length_r_all", fmt_num), ("r(length, score | right)", "length_r_right", fmt_num),
    ("Documented / undocumented mean", "documented_ratio", lambda v: f"{fmt_num(v, 2)}×"),
)


def _metric_validity(report: Report) -> Section | None:
    validity = report.metric_validity
    if not validity:
        return None
    tables = []
    for metric, name in {**METRICS, **RULE_METRICS}.items():
        if validity.get(metric):
            rows = [_validity_row(r["model"], r) for r in validity[metric]["per_model"]]
            rows.append(_validity_row("pooled", validity[metric]["pooled"]))
            tables.append(Table(["Model", *(c[0] for c in _VALIDITY_COLUMNS)], rows,
                                f"{name} as a classifier of the human 'right' label.", f"validity_{metric}"))
    return Section("Metric validity", [
        "ROC-AUC and point-biserial r against the human right indicator; length is the answer's word "
        "count (Pearson r)."], tables)


def _validity_row(model: str, r: dict) -> list[str]:
    return [model, *(fmt(r[key]) for _, key, fmt in _VALIDITY_COLUMNS)]


def _abstention(report: Report) -> Section | None:
    if not report.abstention:
        return None
    rows = [[r["model"], str(r["subset"]), str(r["n"]), str(r["abstained"]), fmt_pct(r["abstention_rate"]),
             str(r["confabulated"]), fmt_pct(r["confabulation_rate"])] for r in report.abstention]
    return Section("Abstention and confabulation", [
        "Abstained: the answer declines (\"I don't know\", \"I'm not familiar with ...\"). Confabulated: a "
        f"non-empty answer {_called_wrong(report)} that does not decline."],
        [Table(["Model", "Subset", "n", "Abstained", "Abstention rate", "Confabulated", "Confabulation rate"],
               rows, name="abstention_by_model_subset")])


def _called_wrong(report: Report) -> str:
    return f"{report.outcome} calls wrong" if names_outcome(report) else "the human labelled wrong"


def _missing_data(report: Report) -> Section | None:
    if not report.missing:
        return None
    rows = [[r["model"], str(r["items"]), str(r["answered"]), str(r["empty"]), str(r["no_answer"]),
             str(r["unlabelled_human"]), str(r["unlabelled_judge"]), str(r["reference_empty"])]
            for r in report.missing]
    return Section("Missing data", [
        "Empty answers and items without an answer count as wrong for every rater (lower bound); "
        "non-empty answers a rater did not label are left out of that rater's statistics."],
        [Table(["Model", "Items", "Answered", "Empty", "No answer",
                correct_heading(report, "No human label").replace("correct = ", "Not scored by "), "No judge label",
                "Empty reference"], rows, name="missing_data_by_model")])


def _notes(report: Report) -> Section | None:
    if not report.notes:
        return None
    return Section("Notes", [f"**{note_heading(n.section)}**: {user(n.reason)}" for n in report.notes])


_WORDS = {"overall": "overall accuracy", "per_title": "per-title accuracy", "gap": "contamination gap",
          "judge": "LLM judge", "agreement": "human × judge agreement", "rank_correlation": "rank correlation",
          "metric_validity": "metric validity", "mcnemar": "pairwise comparisons", "abstention": "abstention",
          "human_rater": "human rater", "judge_rater": "judge rater", "inter_annotator": "inter-annotator agreement",
          "missing": "missing data", "surface_by_subset": "surface metrics by subset", "bleu2": "BLEU-2",
          "bertscore_f1": "BERTScore-F1", "judge_partial_credit": "judge partial credit",
          "cmh": "pooled odds ratio (CMH)", "logistic": "logistic model", "unlabelled": "unlabelled models",
          "human": "human labels", "judge_gap": "contamination gap under the judge"}


def _not_in_report(report: Report) -> Section | None:
    rows = report.not_in_report
    if not rows:
        return None
    return Section("Not in this report", ["\n".join(f"- **{row['section']}**: {row['reason']}." for row in rows)])


def note_heading(section: str) -> str:
    """``rank_correlation.bertscore_f1`` -> ``Rank correlation, BERTScore-F1``; model names stay as given."""
    parts = [", ".join(_WORDS.get(w.strip(), w.strip()) for w in group.split(","))
             for group in section.split(".", 1)]
    text = user(", ".join(parts))
    return text[:1].upper() + text[1:]


# -- Markdown -----------------------------------------------------------------------------------

def _md_table(table: Table) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(md_cell(c) for c in cells) + " |"
    align = "|" + "|".join("---:" if n else "---" for n in table.numeric_columns()) + "|"
    lines = [line(table.headers), align, *(line(row) for row in table.rows)]
    return "\n".join(lines) + (f"\n\n*{md_cell(table.caption)}*" if table.caption else "")


def render_markdown(report: Report, figure_files: bool = True) -> str:
    """``figure_files``: link fig*.png beside report.md (False when printing to stdout)."""
    parts = []
    for i, section in enumerate(sections(report)):
        parts.append(("# " if i == 0 else "## ") + section.heading)
        parts += section.paragraphs
        parts += [_md_table(t) for t in section.tables]
        if figure_files:
            parts += [f"![{md_cell(figure_caption(name, report))}]({name}.png)" for name in section.figures]
    return "\n\n".join(parts) + "\n"
