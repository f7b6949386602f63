"""The report's "Surface metrics by subset" section: mean BLEU-2 and BERTScore-F1 of every scored
answer on the documented and the undocumented subset per model (labels or not), with BCa bootstrap
intervals (resamples and seed stated), Welch's difference and the documented/undocumented ratio,
and the means per title (:func:`contam.harness.report.parts.surface.surface_by_subset` computes them)."""

from __future__ import annotations

from contam.harness.report.analysis import METRICS, figure_regime
from contam.harness.report.model import Report
from contam.harness.report.texts.format import DASH, Section, Table, fmt_num, fmt_num_ci, fmt_p, is_missing
from contam.harness.report.statistics.named_tests import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED

__all__ = ["surface_section"]


def surface_section(report: Report) -> Section | None:
    surface = report.surface_by_subset
    if not surface:
        return None
    contrast = report.contrast
    tables = [_surface_table(surface[metric], contrast, metric) for metric in METRICS if surface.get(metric)]
    if surface["per_title"]:  # no titled item: no per-title table
        tables.append(_surface_title_table(surface["per_title"]))
    return Section("Surface metrics by subset", [
        "Mean score of every scored answer, labels or not: the seed paper's §4.3 evidence that the "
        "contamination signal survives every scoring regime. Each mean has a 95% BCa bootstrap interval "
        f"({BOOTSTRAP_RESAMPLES} resamples of the items, seed {BOOTSTRAP_SEED}), which never leaves the range "
        "of the scores; the "
        "difference has Welch's 95% interval and two-sided p. The ratio is documented mean / undocumented "
        "mean, shown only where both are positive (rescaled BERTScore-F1 can be negative)."],
        tables, figures=["fig1_leaderboard", "fig2_contamination_gap"] if figure_regime(report) == "surface" else [])


def _mean_cell(r: dict, side: str) -> str:
    interval = fmt_num_ci(r[f"{side}_ci_low"], r[f"{side}_ci_high"])
    return f"{fmt_num(r[f'{side}_mean'])} {interval} (n={r[f'{side}_n']})"


def _surface_table(rows: list[dict], contrast: dict, metric: str) -> Table:
    body = [[r["model"], _mean_cell(r, "documented"), _mean_cell(r, "undocumented"),
             fmt_num(r["difference"]), fmt_num_ci(r["difference_ci_low"], r["difference_ci_high"]),
             fmt_p(r["welch_p"]), DASH if is_missing(r["ratio"]) else f"{r['ratio']:.2f}×"] for r in rows]
    return Table(["Model", f"{contrast['documented']} (documented)", f"{contrast['undocumented']} (undocumented)",
                  "Difference", "95% CI (Welch)", "Welch p", "Ratio"], body,
                 f"Mean {METRICS[metric]} by subset [95% BCa bootstrap interval].", f"surface_{metric}_by_subset")


def _surface_title_table(rows: list[dict]) -> Table:
    body = [[r["model"], r["title"], str(r["subset"]), str(r["n"]), fmt_num(r["bleu2"]),
             fmt_num(r["bertscore_f1"]), fmt_num(r["mean_words"], 1)] for r in rows]
    return Table(["Model", "Title", "Subset", "Answers", "BLEU-2", "BERTScore-F1", "Mean words"], body,
                 "Mean score per title over the non-empty answers.", "surface_by_title")
