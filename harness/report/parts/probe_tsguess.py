"""The ts-guess part of the report's probes section: how often each model fills the masked word
of a question exactly, per subset, and whether that differs between the documented and the
undocumented subset.

Per model and subset: items probed (an item without an eligible word is counted apart as not
probed, never as a miss), exact matches, the rate with its 95 % Wilson interval. Per model: the
documented and undocumented rates, their difference with Newcombe's hybrid score interval, the
odds ratio and the two-sided Fisher exact p on the 2 x 2 table match / no match, as the main
report does for accuracy (:mod:`contam.harness.report.statistics.named_tests`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from contam.harness.report.inputs.cells import contrast_2x2, subset_rank
from contam.harness.report.model import Report
from contam.harness.report.texts.format import (Section, Table, contrast_names, fmt_ci, fmt_or, fmt_p, fmt_pct, fmt_pp,
                                   fmt_sides, user)
from contam.harness.report.statistics.holm import HOLM_CAPTION
from contam.harness.report.inputs.probe_rows import chosen_params, other_params_note, score_frame
from contam.harness.report.statistics.named_tests import proportion, wilson_interval
from contam.harness.store import Store
from contam.metrics.probe_tsguess import MAX_FILL_WORDS, NOT_A_FILLER, fills_masks, is_fill

__all__ = ["KIND", "FIGURE", "METRIC", "build", "section", "tidy", "tsguess_part", "not_applicable"]

KIND = "ts-guess"
FIGURE = "fig_probe_tsguess"
METRIC = "exact_match"


def build(store: Store, contrast: tuple[str, str]) -> dict[str, Any] | None:
    """``report.probes["ts-guess"]``, or None when the store has no ts-guess scores."""
    chosen = chosen_params(store, KIND)
    if chosen is None:
        return None
    frame = score_frame(store, KIND, chosen["params_sha256"])
    fillers = _fill_counts(store, chosen["params_sha256"])
    return {**chosen, **tsguess_part(frame[frame["metric"] == METRIC], contrast, fillers)}


# The stored replies (normalised) of the items that were probed.
_REPLIES_SQL = """
SELECT model, detail->>'reply' AS reply FROM latest_probe_scores
WHERE probe = ? AND params_sha256 = ? AND metric = ? AND value IS NOT NULL
"""


def _fill_counts(store: Store, params_sha256: str) -> dict[str, dict[str, Any]]:
    """model -> its replies that could be a fill, out of how many, and whether it fills masks."""
    replies: dict[str, list[str]] = {}
    for model, reply in store.query(_REPLIES_SQL, [KIND, params_sha256, METRIC]):
        replies.setdefault(model, []).append(reply or "")
    return {model: {"fills": sum(map(is_fill, texts)), "replies": len(texts),
                    "fills_masks": fills_masks(texts)} for model, texts in replies.items()}


def not_applicable(store: Store, part: dict[str, Any] | None = None) -> dict[str, str]:
    """model -> why ts-guess says nothing about it (the registry's ``not_applicable`` hook);
    ``part``: this report's ts-guess part, whose fill counts are read rather than counted again."""
    if part is not None:
        return {model: NOT_A_FILLER for model in part["not_applicable"]}
    chosen = chosen_params(store, KIND)
    counts = _fill_counts(store, chosen["params_sha256"]) if chosen else {}
    return {model: NOT_A_FILLER for model, c in counts.items() if not c["fills_masks"]}


def tsguess_part(frame: pd.DataFrame, contrast: tuple[str, str],
                 fillers: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """``frame``: one row per (model, item) with ``model``, ``item_id``, ``subset`` and ``value``
    (1.0 match, 0.0 miss, NaN not probed); ``fillers``: :func:`_fill_counts` (none: every model
    fills masks). A model that does not fill masks keeps its rates, marked, and has no test."""
    fillers = fillers or {}
    unfit = {m for m, c in fillers.items() if not c["fills_masks"]}
    rates = [_rate(model, subset, rows) for (model, subset), rows
             in frame.groupby(["model", "subset"], sort=False, observed=True)]
    rates.sort(key=lambda r: (r["model"], subset_rank(r["subset"], contrast), r["subset"]))
    tests = [_test(model, rates, contrast) for model in sorted({r["model"] for r in rates} - unfit)]
    return {"metric": METRIC, "rates": rates, "tests": [t for t in tests if t is not None],
            "fillers": fillers, "not_applicable": sorted(unfit)}


def _rate(model: str, subset: str, rows: pd.DataFrame) -> dict[str, Any]:
    probed = rows["value"].dropna()
    n, hits = len(probed), int((probed == 1.0).sum())
    low, high = wilson_interval(hits, n)
    return {"model": model, "subset": subset, "n": n, "matches": hits,
            "rate": proportion(hits, n), "ci_low": low, "ci_high": high,
            "not_probed": len(rows) - n}


def _test(model: str, rates: list[dict[str, Any]], contrast: tuple[str, str]) -> dict[str, Any] | None:
    """The model's documented-vs-undocumented contrast, from its rates; None unless both
    subsets have a probed item."""
    sides = {r["subset"]: r for r in rates if r["model"] == model}
    doc, undoc = (sides.get(name, {"n": 0}) for name in contrast)
    if not doc["n"] or not undoc["n"]:
        return None
    return {"model": model, **contrast_2x2(doc["matches"], doc["n"], undoc["matches"], undoc["n"],
                                           count="matches", share="rate")}


def tidy(part: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The part's tidy tables (``contam.harness.report.writers.tidy``), named as its display tables, and the
    models it does not apply to (only when there is one: a study whose models fill masks keeps
    its tables as they were)."""
    tables = {"probe_tsguess_by_model_subset": part["rates"], "probe_tsguess_contrast": part["tests"]}
    unfit = [{"model": model, "reason": NOT_A_FILLER, **part["fillers"][model]}
             for model in part.get("not_applicable", ())]
    return {**tables, "probe_tsguess_not_applicable": unfit} if unfit else tables


# -- rendering ---------------------------------------------------------------------------------

def section(part: dict[str, Any], report: Report) -> Section:
    doc, undoc = contrast_names(report).values()
    rates = Table(["Model", "Subset", "Items probed", "Matches", "Exact match", "95% CI (Wilson)",
                   "Not probed"],
                  [[r["model"], str(r["subset"]), str(r["n"]), str(r["matches"]),
                    *_rate_cells(r, part), str(r["not_probed"])] for r in part["rates"]],
                  "Exact-match rate of the masked word per model and subset.",
                  "probe_tsguess_by_model_subset")
    tests = Table(["Model", doc, undoc, "Difference", "95% CI (Newcombe)", "Odds ratio", "Fisher p",
                   "Holm p"],
                  [[r["model"], *fmt_sides(r, "matches", "rate"),
                    fmt_pp(r["difference"], signed=True), fmt_ci(r["ci_low"], r["ci_high"]),
                    fmt_or(r["odds_ratio"]), fmt_p(r["fisher_p"]), fmt_p(r.get("p_holm"))]
                   for r in part["tests"]],
                  "Documented vs undocumented: odds ratio ad/bc and two-sided Fisher exact p on the "
                  "2×2 match / no match table; the difference's interval is Newcombe's hybrid score "
                  f"interval.{HOLM_CAPTION}", "probe_tsguess_contrast")
    return Section("Probe: ts-guess (testset slot guessing)", _paragraphs(part),
                   [rates, tests], figures=[FIGURE])


def _rate_cells(rate: dict[str, Any], part: dict[str, Any]) -> list[str]:
    if rate["model"] in part.get("not_applicable", ()):
        return ["not applicable", "—"]
    return [fmt_pct(rate["rate"]), fmt_ci(rate["ci_low"], rate["ci_high"])]


def _filler_lines(part: dict[str, Any]) -> list[str]:
    """One line per model whose replies are mostly not a fill: 0% there is no evidence."""
    return [f"{user(model)}: {NOT_A_FILLER} ({c['replies'] - c['fills']} of {c['replies']} replies "
            f"are longer than {MAX_FILL_WORDS} words or not a word), so its exact-match rate says "
            "nothing about contamination and it has no contrast test."
            for model, c in sorted((part.get("fillers") or {}).items()) if not c["fills_masks"]]


def _paragraphs(part: dict[str, Any]) -> list[str]:
    lines = ["One word of each question is masked and the model asked to fill it in, greedy, with "
             "the item's title as a hint (Deng et al. 2023, arXiv 2311.09783, question-based). The "
             "masked word is the question's rarest content word by wordfreq's Zipf frequency "
             "(stop words, numbers, one-letter words and title words excluded; the first on a tie): "
             f"rule {user(part['params'].get('rule', '?'))}. A reply matches when it equals the word "
             "after NFC, case folding and removing punctuation. An item without an eligible word is "
             "not probed and not counted. Rates have 95% Wilson intervals. Parameters "
             f"{user(part['params_sha256'][:12])}."]
    return lines + _filler_lines(part) + other_params_note(part, KIND)
