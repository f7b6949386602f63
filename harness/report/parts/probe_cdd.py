"""The cdd probe's part of the report (``report.probes["cdd"]``): per model, the share of items
flagged as peaked (Dong et al. 2024; :mod:`contam.metrics.probe_cdd`) with 95% Wilson intervals and the
mean peakedness, the same per subset, and per model the documented against the undocumented
subset on the 2×2 flagged / not-flagged table (:func:`contam.harness.report.inputs.cells.contrast_2x2`, as the
gap table and ts-guess do): the difference of shares with Newcombe's interval, the odds ratio
ad/bc and Fisher's two-sided exact p. A model without a scored item on one side has no contrast
row (as in ts-guess), not a Fisher p of 1.

``short``: how many scored cells are shorter than 1/alpha tokens (20 at alpha = 0.05), where alpha
× length is under one token, so that a flag only says that a sample equals the greedy answer: on
short answers cdd mostly measures knowing the fact. The section says so beside the tables.

A store may hold cdd runs under several parameter sets; the part reports the one with the most
scored cells (the latest on a tie) and names it, with its parameters. Cells whose peakedness is
None (every text empty) are left out and counted (``unscored``).
"""

from __future__ import annotations

from typing import Any

from contam.harness.report.inputs.cells import contrast_2x2
from contam.harness.report.model import Report
from contam.harness.report.texts.format import (Section, Table, contrast_names, fmt_ci, fmt_num, fmt_or, fmt_p,
                                   fmt_pct, fmt_pp, fmt_sides, user)
from contam.harness.report.statistics.holm import HOLM_CAPTION
from contam.harness.report.inputs.probe_rows import chosen_params, other_params_note
from contam.harness.report.statistics.named_tests import proportion, wilson_interval
from contam.harness.store import Store

__all__ = ["KIND", "FIGURE", "build", "section", "tidy"]

KIND = "cdd"
FIGURE = "fig_probe_cdd"

_CELLS_SQL = """
SELECT s.model, {subset} AS subset, count(*) FILTER (WHERE f.value IS NOT NULL) AS n,
       count(*) FILTER (WHERE f.value = 1) AS flagged,
       avg(s.value) AS mean_peakedness, count(*) FILTER (WHERE f.value IS NULL) AS unscored
FROM latest_probe_scores s
JOIN latest_probe_scores f ON f.probe = s.probe AND f.params_sha256 = s.params_sha256
     AND f.item_id = s.item_id AND f.model = s.model AND f.metric = 'flagged'
JOIN latest_items i ON i.item_id = s.item_id
WHERE s.probe = 'cdd' AND s.params_sha256 = ? AND s.metric = 'peakedness'
GROUP BY ALL ORDER BY ALL
"""


def build(store: Store, contrast: tuple[str, str]) -> dict[str, Any] | None:
    """The part, or None when the store has no cdd scores."""
    chosen = chosen_params(store, KIND)
    if chosen is None:
        return None
    sha = chosen["params_sha256"]
    per_model = [_share_row(r) for r in _cells(store, sha, "NULL")]
    per_subset = [_share_row(r) for r in _cells(store, sha, "i.subset")]
    rows = [_contrast_row(model, per_subset, contrast) for model in [r["model"] for r in per_model]]
    return {**chosen, "per_model": per_model, "per_subset": per_subset,
            "contrast": [row for row in rows if row is not None],
            "short": _short_cells(store, sha, chosen["params"].get("alpha"))}


def _short_cells(store: Store, sha: str, alpha: float | None) -> dict[str, Any]:
    """Scored cells whose compared length (detail.max_length) is under 1/alpha tokens."""
    limit = 1 / alpha if alpha else 0
    n, short = store.query(
        "SELECT count(*), count(*) FILTER (WHERE CAST(detail->>'max_length' AS DOUBLE) < ?) "
        "FROM latest_probe_scores WHERE probe = 'cdd' AND params_sha256 = ? AND metric = 'peakedness' "
        "AND value IS NOT NULL", [limit, sha])[0]
    return {"tokens": limit, "n": n, "short": short, "share": proportion(short, n)}


def _cells(store: Store, sha: str, subset: str) -> list[dict[str, Any]]:
    rows = store.query_dicts(_CELLS_SQL.format(subset=subset), [sha])
    return [{key: value for key, value in row.items() if subset != "NULL" or key != "subset"}
            for row in rows]


def _share_row(row: dict[str, Any]) -> dict[str, Any]:
    low, high = wilson_interval(row["flagged"], row["n"])
    return {**row, "flagged_share": proportion(row["flagged"], row["n"]), "ci_low": low,
            "ci_high": high}


def _contrast_row(model: str, per_subset: list[dict], contrast: tuple[str, str]) -> dict[str, Any] | None:
    sides = {r["subset"]: r for r in per_subset if r["model"] == model}
    doc, undoc = (sides.get(name, {"n": 0, "flagged": 0}) for name in contrast)
    if not doc["n"] or not undoc["n"]:
        return None
    return {"model": model, **contrast_2x2(doc["flagged"], doc["n"], undoc["flagged"], undoc["n"],
                                           count="flagged", share="share")}


def tidy(part: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The part's tidy tables (``contam.harness.report.writers.tidy``), named as its display tables."""
    return {"probe_cdd_by_model": part["per_model"], "probe_cdd_by_model_subset": part["per_subset"],
            "probe_cdd_contrast": part["contrast"]}


# -- rendering ---------------------------------------------------------------------------------

def section(part: dict[str, Any], report: Report) -> Section:
    doc, undoc = contrast_names(report).values()
    return Section("Probe: cdd (output peakedness)", _paragraphs(part), [
        _share_table(part["per_model"], "Per model, every item.", "probe_cdd_by_model"),
        _share_table(part["per_subset"], "Per model and subset.", "probe_cdd_by_model_subset",
                     subset=True),
        Table(["Model", f"{doc} flagged", f"{undoc} flagged", "Difference", "95% CI (Newcombe)",
               "Odds ratio", "Fisher p", "Holm p"],
              [[r["model"], *fmt_sides(r, "flagged", "share"), fmt_pp(r["difference"], signed=True),
                fmt_ci(r["ci_low"], r["ci_high"]), fmt_or(r["odds_ratio"]), fmt_p(r["fisher_p"]),
                fmt_p(r.get("p_holm"))] for r in part["contrast"]],
              "Documented vs undocumented: odds ratio ad/bc and two-sided Fisher exact p on the "
              "2×2 flagged / not-flagged table; the difference's interval is Newcombe's hybrid "
              f"score interval.{HOLM_CAPTION}", "probe_cdd_contrast")], figures=[FIGURE])


def _paragraphs(part: dict[str, Any]) -> list[str]:
    p = part["params"]
    lines = [f"One greedy answer and {p['samples']} samples at temperature {p['temperature']} per item "
             "(Dong et al. 2024, arXiv 2402.15938). Peakedness is the fraction of samples whose "
             f"token edit distance to the greedy answer is at most alpha = {p['alpha']} × the longest "
             f"length; an item is flagged when its peakedness exceeds xi = {p['xi']}. Shares have 95% "
             f"Wilson intervals. Parameters {user(part['params_sha256'][:12])}."]
    return lines + _short_note(part.get("short"), p) + other_params_note(part, KIND)


def _short_note(short: dict[str, Any] | None, params: dict[str, Any]) -> list[str]:
    if not short or not short["n"]:
        return []
    samples = params["samples"]
    return [f"**Short answers**: {fmt_pct(short['share'])} of the scored cells ({short['short']} of "
            f"{short['n']}) are under {short['tokens']:g} tokens, where alpha × length is under one "
            f"token: there only a sample equal to the greedy answer counts as close, and a cell is flagged "
            f"once more than xi = {params['xi']} of the samples are, so on short answers cdd mostly "
            "measures knowing the fact, not memorising the text. With one such sample enough, a clean "
            f"model that repeats its greedy answer 5% of the time is flagged with probability "
            f"{1 - 0.95 ** samples:.2f} at {samples} samples."]


def _share_table(rows: list[dict], caption: str, name: str, subset: bool = False) -> Table:
    head = ["Model", *(["Subset"] if subset else []), "Items", "Flagged", "Share", "95% CI (Wilson)",
            "Mean peakedness", "Unscored"]
    body = [[r["model"], *([str(r["subset"])] if subset else []), str(r["n"]), str(r["flagged"]),
             fmt_pct(r["flagged_share"]), fmt_ci(r["ci_low"], r["ci_high"]),
             fmt_num(r["mean_peakedness"]), str(r["unscored"])] for r in rows]
    return Table(head, body, caption, name)
