"""Store -> the report object: SQL over the views for the counts, ``harness.report.stats`` for the rest.

The unit of analysis is the (item, model) cell over every item in the store and every model that
has an answer or a label. Missing data follows the seed paper's lower-bound rule: an empty answer,
or an item a model never answered, counts as wrong (and is counted in ``missing``); a non-empty
answer without a label from the chosen rater is left out of that rater's statistics (and counted).

Keys follow DESIGN.md's report schema exactly; everything beyond it sits under extra keys
(``regimes``, ``mcnemar``, ``cmh``, ``logistic``, ``inter_annotator``, ``abstention``, ``missing``,
``answer_length``, ``judge_gap``, ``surface_by_subset``, ``notes``, ``meta``, ``provenance``). A
section without data is ``None`` and ``notes`` says why.

``surface_by_subset`` needs no labels at all: the mean BLEU-2 and BERTScore-F1 of every scored
answer on the documented and the undocumented subset per model, with BCa bootstrap intervals
(resampling items, fixed seed; never outside the scores' range), Welch's
test of the difference and the documented/undocumented ratio (the seed paper's §4.3 evidence that
the contamination signal survives every scoring regime), and the same means per title.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from harness import __version__
from harness.errors import UserError
from harness.report import contamination, provenance, stats
from harness.store import Store, utc_now

__all__ = ["build_report", "parse_contrast", "figure_regime", "LABELS", "METRICS"]

LABELS = ("right", "partial", "wrong")
METRICS = {"bleu2": "BLEU-2", "bertscore_f1": "BERTScore-F1"}

# One row per (item, model) with the effective human and judge labels ($1 human rater, $2 judge
# rater). An empty answer is wrong whatever its label says; an item with neither an answer nor a
# label is wrong too (unanswered); a non-empty answer without a label stays NULL (unlabelled).
_CELLS_SQL = """
WITH models AS (SELECT model FROM latest_answers UNION SELECT model FROM latest_labels),
grid AS (SELECT i.item_id, i.title, i.subset, i.seq AS item_seq, m.model
         FROM latest_items i CROSS JOIN models m),
raw AS (
    SELECT g.*, a.item_id IS NOT NULL AS has_answer,
           a.item_id IS NOT NULL AND coalesce(trim(a.answer), '') = '' AS empty,
           a.item_id IS NOT NULL AND coalesce(trim(a.answer), '') <> '' AS answered,
           c.answer_words, coalesce(c.abstained, false) AS abstained, c.bleu2, c.bertscore_f1,
           coalesce(c.reference_empty, false) AS reference_empty,
           h.label AS human_raw, j.label AS judge_raw
    FROM grid g
    LEFT JOIN latest_answers a USING (item_id, model)
    LEFT JOIN cells c USING (item_id, model)
    LEFT JOIN (SELECT item_id, model, label FROM latest_labels WHERE rater = $1) h USING (item_id, model)
    LEFT JOIN (SELECT item_id, model, label FROM latest_labels WHERE rater = $2) j USING (item_id, model))
SELECT *,
    CASE WHEN empty OR (NOT has_answer AND human_raw IS NULL) THEN 'wrong' ELSE human_raw END AS human,
    CASE WHEN empty OR (NOT has_answer AND judge_raw IS NULL) THEN 'wrong' ELSE judge_raw END AS judge
FROM raw
"""


class _Cells:
    """The effective-label cells as a CTE, queried with GROUP BY for every count."""

    def __init__(self, store: Store, human: str | None, judge: str | None) -> None:
        self.store, self.params = store, [human or "", judge or ""]

    def query(self, select: str, extra: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return self.store.query_dicts(f"WITH c AS ({_CELLS_SQL}) {select}", [*self.params, *extra])

    def frame(self) -> pd.DataFrame:
        return self.store.query_df(f"{_CELLS_SQL} ORDER BY model, item_seq", self.params)


def _label_counts(column: str) -> str:
    return (f"count({column}) AS n, count(*) FILTER (WHERE {column} = 'right') AS \"right\", "
            f"count(*) FILTER (WHERE {column} = 'partial') AS partial, "
            f"count(*) FILTER (WHERE {column} = 'wrong') AS wrong")


# -- entry point --------------------------------------------------------------------------------

def build_report(store: Store, *, contrast: tuple[str, str] = ("official", "fan"),
                 human: str | None = None, judge: str | None = None) -> dict[str, Any]:
    """Everything `contam report` prints, as one JSON-ready dict (see DESIGN.md, Report)."""
    _require_data(store)
    _require_subsets(store, contrast)
    notes: list[dict[str, str]] = []
    human = _human_rater(store, human, notes)
    judge = _judge_rater(store, judge, notes)
    cells = _Cells(store, human, judge)
    report = _sections(store, cells, contrast, human, judge, notes)
    report["notes"] = notes
    return report


def _sections(store, cells, contrast, human, judge, notes) -> dict[str, Any]:
    overall = _overall(cells) if human else None
    judge_rows = _judge(cells, overall) if judge else None
    frame = cells.frame()
    report: dict[str, Any] = {
        "contrast": {"documented": contrast[0], "undocumented": contrast[1]},
        "human_rater": human, "judge_rater": judge,
        "overall": overall,
        "per_title": _per_title(cells, _order(overall), contrast) if human else None,
        "gap": _gap(cells, contrast) if human else None,
        "judge": judge_rows,
        "agreement": _agreement(cells, _order(overall)) if human and judge else None,
    }
    regimes = _regimes(cells, frame, _order(overall) or sorted(frame["model"].unique()), overall, judge_rows)
    report["rank_correlation"] = _rank_correlation(regimes, notes) if human else None
    report["metric_validity"] = _metric_validity(frame, contrast, _order(overall), notes) if human else None
    report.update(_extras(store, cells, frame, contrast, (human, judge), regimes, overall, notes))
    report.update(_across_models(report["gap"], frame, contrast, _order(overall), notes))
    _note_missing_sections(human, judge, notes)
    return report


def _extras(store, cells, frame, contrast, raters, regimes, overall, notes) -> dict[str, Any]:
    (human, judge), order = raters, _order(overall) or sorted(frame["model"].unique())
    missing = _missing(cells, order)
    _note_missing_data(missing, notes, human)
    return {
        "judge_gap": _gap(cells, contrast, "judge") if judge else None,
        "surface_by_subset": _surface_by_subset(frame, order, contrast, notes),
        "regimes": regimes,
        "mcnemar": _mcnemar(frame, contrast, order) if human else None,
        "inter_annotator": _inter_annotator(store, notes),
        "abstention": _abstention(cells, order, contrast) if human else None,
        "missing": missing,
        "answer_length": _answer_length(cells, order),
        "meta": _meta(store, frame),
        "provenance": provenance.provenance(store),
    }


def _across_models(gap: list[dict] | None, frame, contrast, order, notes) -> dict[str, Any]:
    """The contamination effect pooled over models (needs human labels, as the gap does)."""
    if not gap:
        return {"cmh": None, "logistic": None}
    return {"cmh": contamination.cmh(gap, notes), "logistic": contamination.logistic(frame, contrast, order, notes)}


# -- validating the request ---------------------------------------------------------------------

def parse_contrast(text: str) -> tuple[str, str]:
    parts = [p.strip() for p in (text or "").split(",")]
    if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
        raise UserError(f"--contrast {text!r}: expected two different subsets, e.g. official,fan")
    return parts[0], parts[1]


def _require_data(store: Store) -> None:
    if store.count("latest_items") == 0:
        raise UserError(f"{store.path}: the store has no items; import items first")
    if store.count("latest_answers") + store.count("latest_labels") == 0:
        raise UserError(f"{store.path}: the store has no answers or labels to report on")


def _require_subsets(store: Store, contrast: tuple[str, str]) -> None:
    present = [r[0] for r in store.query("SELECT DISTINCT subset FROM latest_items ORDER BY 1")]
    for name in contrast:
        if name not in present:
            raise UserError(f"--contrast: subset {name!r} has no items "
                            f"(subsets in the store: {', '.join(map(str, present)) or 'none'})")


def _raters(store: Store, where: str) -> list[tuple[str, int]]:
    return [tuple(r) for r in store.query(
        f"SELECT rater, count(*) FROM latest_labels WHERE {where} GROUP BY rater ORDER BY rater")]


def _human_rater(store: Store, wanted: str | None, notes: list) -> str | None:
    raters = [r for r, _ in _raters(store, "rater = 'human' OR rater LIKE 'human:%'")]
    if wanted:
        if wanted not in raters:
            raise UserError(f"--human {wanted!r}: no such rater (human raters: {', '.join(raters) or 'none'})")
        return wanted
    if not raters:
        return None
    chosen = "human" if "human" in raters else raters[0]
    if len(raters) > 1:
        notes.append({"section": "human_rater", "reason": f"several human raters ({', '.join(raters)}); "
                      f"accuracy uses {chosen!r} (choose with --human)"})
    return chosen


def _judge_rater(store: Store, wanted: str | None, notes: list) -> str | None:
    raters = _raters(store, "rater LIKE 'judge:%'")
    names = [r for r, _ in raters]
    if wanted:
        if wanted not in names:
            raise UserError(f"--judge {wanted!r}: no such rater (judge raters: {', '.join(names) or 'none'})")
        return wanted
    if not raters:
        return None
    chosen = min(raters, key=lambda r: (-r[1], r[0]))[0]
    if len(raters) > 1:
        notes.append({"section": "judge_rater", "reason": f"several judge raters ({', '.join(names)}); "
                      f"using {chosen!r}, the one with most labels (choose with --judge)"})
    return chosen


# -- accuracy -----------------------------------------------------------------------------------

def _accuracy_row(row: dict[str, Any]) -> dict[str, Any]:
    n, right, partial = row["n"], row["right"], row["partial"]
    low, high = stats.wilson_interval(right, n)
    return {**row, "accuracy": stats.proportion(right, n), "ci_low": low, "ci_high": high,
            "partial_credit": stats.partial_credit(right, partial, n)}


def _overall(cells: _Cells) -> list[dict[str, Any]]:
    rows = [_accuracy_row(r) for r in cells.query(
        f"SELECT model, {_label_counts('human')} FROM c GROUP BY model")]
    return sorted(rows, key=lambda r: (-_num(r["accuracy"]), r["model"]))


def _order(overall: list[dict] | None) -> list[str]:
    return [r["model"] for r in overall or []]


def _per_title(cells: _Cells, order: list[str], contrast: tuple[str, str]) -> list[dict[str, Any]]:
    rows = cells.query(
        f"SELECT model, title, subset, min(item_seq) AS first_seq, {_label_counts('human')} "
        "FROM c GROUP BY model, title, subset")
    stratum = {contrast[0]: 0, contrast[1]: 1}
    rows.sort(key=lambda r: (order.index(r["model"]), stratum.get(r["subset"], 2), r["first_seq"]))
    keys = ("model", "title", "subset", "n", "right", "accuracy", "ci_low", "ci_high")
    return [{k: _accuracy_row(r)[k] for k in keys} for r in rows]


def _gap(cells: _Cells, contrast: tuple[str, str], rater: str = "human") -> list[dict[str, Any]]:
    """The 2×2 right / not-right contrast per model under the ``human`` or the ``judge`` labels."""
    rows = cells.query(
        f"SELECT model, count({rater}) FILTER (WHERE subset = $3) AS dn, "
        f"count(*) FILTER (WHERE subset = $3 AND {rater} = 'right') AS dk, "
        f"count({rater}) FILTER (WHERE subset = $4) AS un, "
        f"count(*) FILTER (WHERE subset = $4 AND {rater} = 'right') AS uk FROM c GROUP BY model", contrast)
    gaps = [_gap_row(r["model"], r["dk"], r["dn"], r["uk"], r["un"]) for r in rows]
    family = f"Fisher, one test per model ({len(gaps)} tests, {rater} labels)"
    _add_holm(gaps, "fisher_p", "fisher_p_holm", family)
    return sorted(gaps, key=lambda r: (-_num(r["gap"]), r["model"]))


def _add_holm(rows: list[dict[str, Any]], raw: str, adjusted: str, family: str) -> None:
    """Holm-adjusted p beside the raw one in every row of one family, and the family's name."""
    for row, p in zip(rows, stats.holm([_nan_if_none(r[raw]) for r in rows])):
        row[adjusted], row["holm_family"] = p, family


def _gap_row(model: str, dk: int, dn: int, uk: int, un: int) -> dict[str, Any]:
    fisher = stats.fisher_exact_2x2(dk, dn - dk, uk, un - uk)
    d_low, d_high = stats.wilson_interval(dk, dn)
    u_low, u_high = stats.wilson_interval(uk, un)
    g_low, g_high = stats.newcombe_interval(dk, dn, uk, un)
    documented, undocumented = stats.proportion(dk, dn), stats.proportion(uk, un)
    return {"model": model, "documented_n": dn, "documented_right": dk,
            "documented_accuracy": documented, "documented_ci_low": d_low, "documented_ci_high": d_high,
            "undocumented_n": un, "undocumented_right": uk, "undocumented_accuracy": undocumented,
            "undocumented_ci_low": u_low, "undocumented_ci_high": u_high,
            "gap": documented - undocumented, "gap_ci_low": g_low, "gap_ci_high": g_high,
            "odds_ratio": _json_ratio(fisher.odds_ratio), "fisher_p": fisher.p}


# -- the judge and agreement ------------------------------------------------------------------

def _judge(cells: _Cells, overall: list[dict] | None) -> list[dict[str, Any]]:
    rows = {r["model"]: r for r in cells.query(
        f"SELECT model, {_label_counts('judge')} FROM c GROUP BY model")}
    order = _order(overall) or sorted(rows)
    keys = ("model", "n", "right", "partial", "wrong", "accuracy", "ci_low", "ci_high", "partial_credit")
    return [{k: _accuracy_row(rows[m])[k] for k in keys} for m in order if m in rows]


def _agreement(cells: _Cells, order: list[str]) -> dict[str, Any]:
    counts = cells.query("SELECT model, human, judge, count(*) AS n FROM c "
                         "WHERE human IS NOT NULL AND judge IS NOT NULL GROUP BY ALL")
    pooled = [[0] * 3 for _ in LABELS]
    per_model: dict[str, list[list[int]]] = {m: [[0] * 3 for _ in LABELS] for m in order}
    for r in counts:
        i, j = LABELS.index(r["human"]), LABELS.index(r["judge"])
        pooled[i][j] += r["n"]
        per_model.setdefault(r["model"], [[0] * 3 for _ in LABELS])[i][j] += r["n"]
    return {"pooled": _agreement_row(pooled),
            "per_model": [{"model": m, **_agreement_row(c)} for m, c in per_model.items()]}


def _agreement_row(confusion: list[list[int]]) -> dict[str, Any]:
    return {"n": int(np.sum(confusion)), "exact": stats.exact_agreement(confusion),
            "kappa": stats.cohen_kappa(confusion),
            "kappa_linear": stats.cohen_kappa(confusion, "linear"),
            "kappa_binary": stats.cohen_kappa(stats.collapse_to_binary(confusion)),
            "confusion": confusion}


# -- the regimes side by side (Table 5) ---------------------------------------------------------

def _regimes(cells: _Cells, frame: pd.DataFrame, order: list[str], overall: list[dict] | None,
             judge_rows: list[dict] | None) -> list[dict[str, Any]]:
    """Table 5: each regime's per-model aggregate, models in human order (else by name)."""
    surface = {r["model"]: r for r in cells.query(
        "SELECT model, avg(bleu2) AS bleu2, count(bleu2) AS bleu2_n, avg(bertscore_f1) AS bertscore_f1, "
        "count(bertscore_f1) AS bertscore_f1_n, avg(answer_words) FILTER (WHERE answered) AS mean_words "
        "FROM c GROUP BY model")}
    human = {r["model"]: r for r in overall or []}
    judged = {r["model"]: r for r in judge_rows or []}
    return [_regime_row(m, human.get(m, {}), judged.get(m, {}), surface[m], frame[frame["model"] == m])
            for m in order]


def _regime_row(model: str, human: dict, judge: dict, surface: dict, cells: pd.DataFrame) -> dict[str, Any]:
    row = {"model": model, "human_accuracy": human.get("accuracy"),
           "human_partial_credit": human.get("partial_credit"),
           "judge_accuracy": judge.get("accuracy"), "judge_partial_credit": judge.get("partial_credit")}
    for metric in METRICS:
        scores = cells[metric].dropna().astype(float).to_numpy()
        low, high = stats.bootstrap_mean_interval(scores) if len(scores) else (None, None)
        row.update({metric: surface[metric], f"{metric}_n": surface[f"{metric}_n"],
                    f"{metric}_ci_low": low, f"{metric}_ci_high": high})
    row["mean_words"] = surface["mean_words"]
    return row


_RANKED = {"judge": "judge_accuracy", "judge_partial_credit": "judge_partial_credit",
           "bleu2": "bleu2", "bertscore_f1": "bertscore_f1"}


def _rank_correlation(regimes: list[dict], notes: list) -> dict[str, float | None]:
    """Spearman ρ across models of each regime's aggregate against human strict accuracy."""
    result: dict[str, float | None] = {}
    for key, column in _RANKED.items():
        rows = [r for r in regimes if r[column] is not None]
        result[key] = stats.spearman([r["human_accuracy"] for r in rows], [r[column] for r in rows]) \
            if len(rows) >= 3 else None
        if result[key] is None:
            notes.append({"section": f"rank_correlation.{key}",
                          "reason": f"{len(rows)} model(s) with {column} data; ρ needs at least 3"})
    return result


# -- metric validity ----------------------------------------------------------------------------

def _metric_validity(frame: pd.DataFrame, contrast, order: list[str], notes: list) -> dict | None:
    labelled = frame[frame["human"].notna()]
    result = {}
    for metric, name in METRICS.items():
        scored = labelled[labelled[metric].notna()]
        if scored.empty:
            notes.append({"section": f"metric_validity.{metric}", "reason": f"no {name} scores in the store"})
            result[metric] = None
            continue
        result[metric] = {
            "pooled": _validity(scored, metric, contrast),
            "per_model": [{"model": m, **_validity(scored[scored["model"] == m], metric, contrast)}
                          for m in order if (scored["model"] == m).any()]}
    return result if any(result.values()) else None


def _validity(cells: pd.DataFrame, metric: str, contrast) -> dict[str, Any]:
    score = cells[metric].astype(float).to_numpy()
    right = (cells["human"] == "right").to_numpy()
    words = cells["answer_words"].astype(float).to_numpy()
    documented = score[(cells["subset"] == contrast[0]).to_numpy()]
    undocumented = score[(cells["subset"] == contrast[1]).to_numpy()]
    return {
        "n": len(score), "n_right": int(right.sum()),
        "mean": _mean(score), "mean_right": _mean(score[right]), "mean_not_right": _mean(score[~right]),
        "roc_auc": stats.roc_auc(score, right), "point_biserial_r": stats.point_biserial(right, score),
        "zero_share_right": _share(score[right] == 0), "below_half_share_right": _share(score[right] < 0.5),
        "length_r_all": stats.pearson(words, score), "length_r_right": stats.pearson(words[right], score[right]),
        "documented_mean": _mean(documented), "undocumented_mean": _mean(undocumented),
        "documented_ratio": _ratio(_mean(documented), _mean(undocumented)),
    }


# -- surface metrics by subset (no labels needed) ------------------------------------------------

def _surface_by_subset(frame: pd.DataFrame, order: list[str], contrast, notes: list) -> dict | None:
    """§4.3's documented/undocumented score means per model, over every scored answer."""
    result: dict[str, Any] = {}
    for metric, name in METRICS.items():
        scored = frame[frame[metric].notna()]
        result[metric] = [_subset_means(scored[scored["model"] == m], m, metric, contrast)
                          for m in order if (scored["model"] == m).any()] or None
        if result[metric] is None:
            notes.append({"section": f"surface_by_subset.{metric}", "reason": f"no {name} scores in the store"})
    if not any(result.values()):
        return None
    result["per_title"] = _surface_per_title(frame, order, contrast)
    return result


def _subset_means(cells: pd.DataFrame, model: str, metric: str, contrast) -> dict[str, Any]:
    documented = cells.loc[cells["subset"] == contrast[0], metric].astype(float).to_numpy()
    undocumented = cells.loc[cells["subset"] == contrast[1], metric].astype(float).to_numpy()
    row: dict[str, Any] = {"model": model, "metric": metric}
    for side, scores in (("documented", documented), ("undocumented", undocumented)):
        low, high = stats.bootstrap_mean_interval(scores)
        row.update({f"{side}_n": len(scores), f"{side}_mean": _mean(scores),
                    f"{side}_ci_low": low, f"{side}_ci_high": high})
    return {**row, **_welch(documented, undocumented),
            "ratio": _positive_ratio(row["documented_mean"], row["undocumented_mean"])}


def _welch(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Difference of means with Welch's 95% interval and two-sided p (undefined below n = 2 a side,
    or when both sides are constant)."""
    difference = _mean(a) - _mean(b) if len(a) and len(b) else math.nan
    if len(a) < 2 or len(b) < 2 or (np.ptp(a) == 0 and np.ptp(b) == 0):
        return {"difference": difference, "difference_ci_low": math.nan,
                "difference_ci_high": math.nan, "welch_p": math.nan}
    with warnings.catch_warnings():  # near-constant samples: scipy warns, the result stands
        warnings.simplefilter("ignore", RuntimeWarning)
        test = sps.ttest_ind(a, b, equal_var=False)
        ci = test.confidence_interval(0.95)
    return {"difference": difference, "difference_ci_low": float(ci.low),
            "difference_ci_high": float(ci.high), "welch_p": float(test.pvalue)}


def _positive_ratio(documented: float, undocumented: float) -> float:
    """A ratio of means is only meaningful when both are positive (rescaled BERTScore can be < 0)."""
    return documented / undocumented if documented > 0 and undocumented > 0 else math.nan


def _surface_per_title(frame: pd.DataFrame, order: list[str], contrast) -> list[dict[str, Any]]:
    answered = frame[frame["answered"]]
    grouped = answered.groupby(["model", "title", "subset"], sort=False).agg(
        first_seq=("item_seq", "min"), n=("item_id", "size"),
        bleu2_n=("bleu2", "count"), bleu2=("bleu2", "mean"),
        bertscore_f1_n=("bertscore_f1", "count"), bertscore_f1=("bertscore_f1", "mean"),
        mean_words=("answer_words", "mean")).reset_index()
    stratum = {contrast[0]: 0, contrast[1]: 1}
    rows = sorted(grouped.to_dict("records"),
                  key=lambda r: (order.index(r["model"]), stratum.get(r["subset"], 2), r["first_seq"]))
    return [{k: _plain(v) for k, v in r.items() if k != "first_seq"} for r in rows]


def _plain(value: Any) -> Any:
    """numpy scalars -> Python numbers, so the rows compare and serialise like the SQL ones."""
    return value.item() if isinstance(value, np.generic) else value


def figure_regime(report: dict) -> str | None:
    """What figures 1 and 2 show: ``human`` accuracy when human labels exist, else the best
    regime available — ``judge`` accuracy, else ``surface`` metric means — else None."""
    if report.get("overall"):
        return "human"
    if report.get("judge"):
        return "judge"
    return "surface" if report.get("surface_by_subset") else None


# -- beyond the paper ---------------------------------------------------------------------------

def _mcnemar(frame: pd.DataFrame, contrast, order: list[str]) -> list[dict[str, Any]]:
    """Exact McNemar for every pair of models, on all items and within each contrast subset."""
    labels = frame[frame["human"].notna()].pivot(index=["item_id", "subset"], columns="model",
                                                 values="human")
    rows = []
    for a, b in combinations(order, 2):
        for scope in ("all", *contrast):
            both = labels[[a, b]].dropna()
            if scope != "all":
                both = both[both.index.get_level_values("subset") == scope]
            rows.append(_mcnemar_row(a, b, scope, both[a], both[b]))
    pairs = len(rows) // (1 + len(contrast)) if rows else 0
    _add_holm(rows, "p", "p_holm", f"exact McNemar, every pair of models in every item scope "
                                   f"({len(rows)} tests: {pairs} pairs × {1 + len(contrast)} scopes)")
    return rows


def _mcnemar_row(a: str, b: str, scope: str, la: pd.Series, lb: pd.Series) -> dict[str, Any]:
    ra, rb = (la == "right").to_numpy(), (lb == "right").to_numpy()
    a_only, b_only = int((ra & ~rb).sum()), int((rb & ~ra).sum())
    return {"model_a": a, "model_b": b, "scope": scope, "n": len(la),
            "a_right": int(ra.sum()), "b_right": int(rb.sum()), "a_only": a_only, "b_only": b_only,
            "identical_labels": int((la.to_numpy() == lb.to_numpy()).sum()),
            "p": stats.mcnemar_exact(a_only, b_only)}


def _inter_annotator(store: Store, notes: list) -> dict[str, Any] | None:
    """Agreement between several human raters on the cells they labelled."""
    labels = store.query_df(
        "SELECT item_id, model, rater, label FROM latest_labels "
        "WHERE rater = 'human' OR rater LIKE 'human:%'")
    raters = sorted(labels["rater"].unique())
    if len(raters) < 2:
        notes.append({"section": "inter_annotator",
                      "reason": f"{len(raters)} human rater(s); agreement needs at least 2"})
        return None
    wide = labels.pivot(index=["item_id", "model"], columns="rater", values="label")
    wide = wide.astype(object).where(wide.notna(), None)
    complete = wide.dropna()
    counts = [[list(row).count(label) for label in LABELS] for row in complete.itertuples(index=False)]
    return {"raters": raters, "n_all_raters": len(complete),
            "fleiss_kappa": stats.fleiss_kappa(counts) if counts else None,
            "pairwise": stats.pairwise_kappas({r: list(wide[r]) for r in raters}, LABELS)}


def _abstention(cells: _Cells, order: list[str], contrast) -> list[dict[str, Any]]:
    """Declining vs confabulating, per model and subset: the seed paper's diagnostic failure mode."""
    rows = cells.query(
        "SELECT model, subset, count(*) AS n, count(*) FILTER (WHERE answered) AS answered, "
        "count(*) FILTER (WHERE answered AND abstained) AS abstained, "
        "count(*) FILTER (WHERE answered AND human = 'wrong') AS wrong_answered, "
        "count(*) FILTER (WHERE answered AND human = 'wrong' AND NOT abstained) AS confabulated "
        "FROM c GROUP BY model, subset")
    stratum = {contrast[0]: 0, contrast[1]: 1}
    rows.sort(key=lambda r: (order.index(r["model"]), stratum.get(r["subset"], 2), str(r["subset"])))
    for r in rows:
        r["abstention_rate"] = stats.proportion(r["abstained"], r["n"])
        r["confabulation_rate"] = stats.proportion(r["confabulated"], r["n"])
    return rows


def _missing(cells: _Cells, order: list[str]) -> list[dict[str, Any]]:
    rows = {r["model"]: r for r in cells.query(
        "SELECT model, count(*) AS items, count(*) FILTER (WHERE answered) AS answered, "
        "count(*) FILTER (WHERE empty) AS empty, count(*) FILTER (WHERE NOT has_answer) AS no_answer, "
        "count(*) FILTER (WHERE answered AND human_raw IS NULL) AS unlabelled_human, "
        "count(*) FILTER (WHERE answered AND judge_raw IS NULL) AS unlabelled_judge, "
        "count(*) FILTER (WHERE empty AND human_raw IN ('right', 'partial')) AS empty_labelled_not_wrong, "
        "count(*) FILTER (WHERE reference_empty) AS reference_empty FROM c GROUP BY model")}
    return [rows[m] for m in order if m in rows]


def _answer_length(cells: _Cells, order: list[str]) -> list[dict[str, Any]]:
    rows = {r["model"]: r for r in cells.query(
        "SELECT model, count(*) FILTER (WHERE answered) AS n, avg(answer_words) FILTER (WHERE answered) AS mean_words, "
        "median(answer_words) FILTER (WHERE answered) AS median_words FROM c GROUP BY model")}
    return [rows[m] for m in order if m in rows]


def _meta(store: Store, frame: pd.DataFrame) -> dict[str, Any]:
    return {"store": str(store.path), "generated_at": utc_now().isoformat(timespec="seconds") + "Z",
            "harness_version": __version__, "items": int(frame["item_id"].nunique()),
            "models": int(frame["model"].nunique())}


# -- notes --------------------------------------------------------------------------------------

def _note_missing_sections(human: str | None, judge: str | None, notes: list) -> None:
    if not human:
        notes.append({"section": "overall, per_title, gap, agreement, rank_correlation, metric_validity, "
                      "mcnemar, cmh, logistic, abstention",
                      "reason": "no human labels in the store (rater 'human' or 'human:<name>')"})
    if not judge:
        notes.append({"section": "judge, agreement, rank_correlation.judge",
                      "reason": "no judge labels in the store (rater 'judge:<model>')"})


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


# -- small helpers ------------------------------------------------------------------------------

def _num(x: float | None) -> float:
    return -math.inf if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _nan_if_none(x: float | None) -> float:
    return math.nan if x is None else x


def _mean(values: np.ndarray) -> float:
    return float(np.mean(values)) if len(values) else math.nan


def _share(flags: np.ndarray) -> float:
    return float(np.mean(flags)) if len(flags) else math.nan


def _ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


def _json_ratio(x: float) -> float | str:
    """JSON has no infinity: an infinite odds ratio is the string "inf" (DESIGN.md)."""
    return "inf" if math.isinf(x) else x
