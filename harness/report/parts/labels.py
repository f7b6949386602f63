"""The label-based analysis: accuracy overall and per title, the documented/undocumented gap, the
judge and its agreement with the humans, McNemar between models, agreement between human raters,
abstention, missing data and answer length — one function per report section, each over the
effective-label cells of :mod:`contam.harness.report.inputs.cells`.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import pandas as pd

from contam.harness.report.statistics import named_tests as stats
from contam.harness.report.inputs.cells import LABELS, Cells, contrast_2x2, nan_if_none, sort_value, subset_rank
from contam.harness.report.texts.format import plural
from contam.harness.store import Store
from contam.harness.store.raters import ADJUDICATOR, HUMAN_RATER_SQL

__all__ = ["model_order", "overall", "per_title", "gap", "judge", "agreement", "mcnemar",
           "inter_annotator", "abstention", "missing", "answer_length"]


def _label_counts(column: str) -> str:
    return (f"count({column}) AS n, count(*) FILTER (WHERE {column} = 'right') AS \"right\", "
            f"count(*) FILTER (WHERE {column} = 'partial') AS partial, "
            f"count(*) FILTER (WHERE {column} = 'wrong') AS wrong")


# -- accuracy -----------------------------------------------------------------------------------

def _accuracy_row(row: dict[str, Any]) -> dict[str, Any]:
    n, right, partial = row["n"], row["right"], row["partial"]
    low, high = stats.wilson_interval(right, n)
    return {**row, "accuracy": stats.proportion(right, n), "ci_low": low, "ci_high": high,
            "partial_credit": stats.partial_credit(right, partial, n)}


def overall(cells: Cells) -> list[dict[str, Any]]:
    rows = [_accuracy_row(r) for r in cells.query(
        f"SELECT model, {_label_counts('human')} FROM c GROUP BY model HAVING count(human) > 0")]
    return sorted(rows, key=lambda r: (-sort_value(r["accuracy"]), r["model"]))


def model_order(overall_rows: list[dict] | None) -> list[str]:
    """The models in the order of the overall accuracy table: those the human rater labelled."""
    return [r["model"] for r in overall_rows or []]


def per_title(cells: Cells, order: list[str], contrast: tuple[str, str]) -> list[dict[str, Any]]:
    rows = cells.query(
        f"SELECT model, title, subset, min(item_seq) AS first_seq, {_label_counts('human')} "
        "FROM c GROUP BY model, title, subset")
    rows = [r for r in rows if r["model"] in order]
    rows.sort(key=lambda r: (order.index(r["model"]), subset_rank(r["subset"], contrast), r["first_seq"]))
    keys = ("model", "title", "subset", "n", "right", "accuracy", "ci_low", "ci_high")
    return [{k: _accuracy_row(r)[k] for k in keys} for r in rows]


def gap(cells: Cells, contrast: tuple[str, str], rater: str = "human",
        notes: list | None = None) -> list[dict[str, Any]]:
    """The 2×2 right / not-right contrast per model under the ``human`` or the ``judge`` labels,
    over the models with labelled items on both subsets (the others are named in ``notes``)."""
    rows = cells.query(
        f"SELECT model, count({rater}) FILTER (WHERE subset = $1) AS dn, "
        f"count(*) FILTER (WHERE subset = $1 AND {rater} = 'right') AS dk, "
        f"count({rater}) FILTER (WHERE subset = $2) AS un, "
        f"count(*) FILTER (WHERE subset = $2 AND {rater} = 'right') AS uk "
        f"FROM c GROUP BY model HAVING count({rater}) > 0", contrast)
    _note_one_sided([r["model"] for r in rows if not (r["dn"] and r["un"])], rater, notes)
    gaps = [_gap_row(r["model"], r["dk"], r["dn"], r["uk"], r["un"]) for r in rows if r["dn"] and r["un"]]
    family = f"Fisher, one test per model ({plural(len(gaps), 'test')}, {_counted_by(cells, rater)})"
    _add_holm(gaps, "fisher_p", "fisher_p_holm", family)
    return sorted(gaps, key=lambda r: (-sort_value(r["gap"]), r["model"]))


def _counted_by(cells: Cells, rater: str) -> str:
    """``human labels``, ``judge labels``, or the outcome the ``human`` column holds."""
    return f"correct = {cells.outcome}" if rater == "human" and not cells.outcome.labels else f"{rater} labels"


def _note_one_sided(models: list[str], rater: str, notes: list | None) -> None:
    if models and notes is not None:
        notes.append({"section": "gap" if rater == "human" else "judge_gap",
                      "reason": f"left out: {', '.join(sorted(models))} (no {rater}-labelled item on one "
                                "of the two subsets, so no contrast)"})


def _add_holm(rows: list[dict[str, Any]], raw: str, adjusted: str, family: str) -> None:
    """Holm-adjusted p beside the raw one in every row of one family, and the family's name."""
    for row, p in zip(rows, stats.holm([nan_if_none(r[raw]) for r in rows])):
        row[adjusted], row["holm_family"] = p, family


def _gap_row(model: str, dk: int, dn: int, uk: int, un: int) -> dict[str, Any]:
    return {"model": model, **contrast_2x2(dk, dn, uk, un, count="right", share="accuracy",
                                           difference="gap", interval="gap_ci")}


# -- the judge and agreement ------------------------------------------------------------------

def judge(cells: Cells, overall_rows: list[dict] | None) -> list[dict[str, Any]]:
    rows = {r["model"]: r for r in cells.query(
        f"SELECT model, {_label_counts('judge')} FROM c GROUP BY model HAVING count(judge) > 0")}
    human = [m for m in model_order(overall_rows) if m in rows]
    order = human + sorted(set(rows) - set(human))  # human order, then the models no human labelled
    keys = ("model", "n", "right", "partial", "wrong", "accuracy", "ci_low", "ci_high", "partial_credit")
    return [{k: _accuracy_row(rows[m])[k] for k in keys} for m in order if m in rows]


def agreement(cells: Cells, order: list[str]) -> dict[str, Any]:
    """Human × judge κ over the answered cells both raters labelled, their labels as given (as
    `contam view` has it); ``imputed``: the blank and unanswered cells both sides count (the
    lower-bound rule's, whatever labels they carry), counted apart and left out of κ."""
    counts = cells.query("SELECT model, human_raw AS human, judge_raw AS judge, count(*) AS n FROM c "
                         "WHERE human_raw IS NOT NULL AND judge_raw IS NOT NULL AND answered GROUP BY ALL")
    imputed = cells.query("SELECT count(*) AS n FROM c WHERE human IS NOT NULL AND judge IS NOT NULL "
                          "AND NOT (answered AND human_raw IS NOT NULL AND judge_raw IS NOT NULL)")[0]["n"]
    pooled = [[0] * 3 for _ in LABELS]
    per_model: dict[str, list[list[int]]] = {m: [[0] * 3 for _ in LABELS] for m in order
                                             if any(r["model"] == m for r in counts)}
    for r in counts:
        i, j = LABELS.index(r["human"]), LABELS.index(r["judge"])
        pooled[i][j] += r["n"]
        per_model.setdefault(r["model"], [[0] * 3 for _ in LABELS])[i][j] += r["n"]
    return {"pooled": stats.agreement_row(pooled), "imputed": imputed,
            "per_model": [{"model": m, **stats.agreement_row(c)} for m, c in per_model.items()]}


# -- beyond the paper ---------------------------------------------------------------------------

def mcnemar(frame: pd.DataFrame, contrast, order: list[str]) -> list[dict[str, Any]]:
    """Exact McNemar for every pair of human-labelled models, on all items and within each contrast
    subset, over the items both models have labels for (a scope with none is left out)."""
    labels = frame[frame["human"].notna()].pivot(index=["item_seq", "subset"], columns="model",
                                                 values="human")
    rows = []
    for a, b in combinations([m for m in order if m in labels.columns], 2):
        for scope in ("all", *contrast):
            both = labels[[a, b]].dropna()
            if scope != "all":
                both = both[both.index.get_level_values("subset") == scope]
            if len(both):
                rows.append(_mcnemar_row(a, b, scope, both[a], both[b]))
    pairs = len({(r["model_a"], r["model_b"]) for r in rows})
    scopes = f"{'' if len(rows) == pairs * (1 + len(contrast)) else 'up to '}{1 + len(contrast)} scopes"
    family = f"{plural(len(rows), 'test')}: {plural(pairs, 'pair')} × {scopes}"
    _add_holm(rows, "p", "p_holm", f"exact McNemar, every pair of models in every item scope ({family})")
    return rows


def _mcnemar_row(a: str, b: str, scope: str, la: pd.Series, lb: pd.Series) -> dict[str, Any]:
    ra, rb = (la == "right").to_numpy(), (lb == "right").to_numpy()
    a_only, b_only = int((ra & ~rb).sum()), int((rb & ~ra).sum())
    return {"model_a": a, "model_b": b, "scope": scope, "n": len(la),
            "a_right": int(ra.sum()), "b_right": int(rb.sum()), "a_only": a_only, "b_only": b_only,
            "identical_labels": int((la.to_numpy() == lb.to_numpy()).sum()),
            "p": stats.mcnemar_exact(a_only, b_only)}


def inter_annotator(store: Store, notes: list) -> dict[str, Any] | None:
    """Agreement between several human raters (the adjudicator aside) on the cells they labelled;
    Fleiss' κ on the cells every one of them labelled."""
    labels = store.query_df(
        "SELECT item_id, model, rater, label FROM latest_labels "
        f"WHERE {HUMAN_RATER_SQL} AND rater <> '{ADJUDICATOR}'")
    raters = sorted(labels["rater"].unique())
    if len(raters) < 2:
        notes.append({"section": "inter_annotator",
                      "reason": f"{plural(len(raters), 'human rater')}; agreement needs at least 2"})
        return None
    wide = labels.pivot(index=["item_id", "model"], columns="rater", values="label")
    wide = wide.astype(object).where(wide.notna(), None)
    complete = wide.dropna()
    counts = [[list(row).count(label) for label in LABELS] for row in complete.itertuples(index=False)]
    return {"raters": raters, "n_all_raters": len(complete),
            "fleiss_kappa": stats.fleiss_kappa(counts) if counts else None,
            "pairwise": stats.pairwise_kappas({r: list(wide[r]) for r in raters}, LABELS)}


def abstention(cells: Cells, order: list[str], contrast) -> list[dict[str, Any]]:
    """Declining vs confabulating, per model and subset: the seed paper's diagnostic failure mode."""
    rows = cells.query(
        "SELECT model, subset, count(*) AS n, count(*) FILTER (WHERE answered) AS answered, "
        "count(*) FILTER (WHERE answered AND abstained) AS abstained, "
        "count(*) FILTER (WHERE answered AND human = 'wrong') AS wrong_answered, "
        "count(*) FILTER (WHERE answered AND human = 'wrong' AND NOT abstained) AS confabulated "
        "FROM c WHERE model IN (SELECT model FROM c WHERE human IS NOT NULL) GROUP BY model, subset")
    rows.sort(key=lambda r: (order.index(r["model"]), subset_rank(r["subset"], contrast), str(r["subset"])))
    every = all(r["subset"] is None for r in rows)  # no item has a subset: one row per model, every item
    for r in rows:
        r["subset"] = "all" if every else r["subset"]
        r["abstention_rate"] = stats.proportion(r["abstained"], r["n"])
        r["confabulation_rate"] = stats.proportion(r["confabulated"], r["n"])
    return rows


def missing(cells: Cells, order: list[str]) -> list[dict[str, Any]]:
    rows = {r["model"]: r for r in cells.query(
        "SELECT model, count(*) AS items, count(*) FILTER (WHERE answered) AS answered, "
        "count(*) FILTER (WHERE empty) AS empty, count(*) FILTER (WHERE NOT has_answer) AS no_answer, "
        "count(*) FILTER (WHERE answered AND human_raw IS NULL) AS unlabelled_human, "
        "count(*) FILTER (WHERE answered AND judge_raw IS NULL) AS unlabelled_judge, "
        "count(*) FILTER (WHERE empty AND human_raw IN ('right', 'partial')) AS empty_labelled_not_wrong, "
        "count(*) FILTER (WHERE reference_empty) AS reference_empty FROM c GROUP BY model")}
    return [rows[m] for m in order if m in rows]


def answer_length(cells: Cells, order: list[str]) -> list[dict[str, Any]]:
    rows = {r["model"]: r for r in cells.query(
        "SELECT model, count(*) FILTER (WHERE answered) AS n, avg(answer_words) FILTER (WHERE answered) AS mean_words, "
        "median(answer_words) FILTER (WHERE answered) AS median_words FROM c GROUP BY model")}
    return [rows[m] for m in order if m in rows]
