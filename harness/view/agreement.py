"""Agreement between raters and the adjudication that settles their disagreements.

Counts are made in SQL (a confusion table per pair of raters); the statistics are the report's
(:mod:`contam.harness.report.statistics.named_tests`): Cohen's kappa for every pair of human raters and for every human
rater against every judge, Fleiss' kappa once three or more human raters have labels (on the cells
every one of them labelled, as the report has it).

The adjudicator's labels are rater ``human:adjudicated``: for a cell the human raters disagree
on, the adjudicator's decision; for a cell two or more of them labelled alike, that label, written
in one go from the agreement page (one rater's label is no agreement, so it is never settled). ``contam report --human human:adjudicated``
then reports on the settled labels. A disagreement comes back to the queue when a rater changes
a label after it was settled; so does an agreement, among the agreed cells, when it is on another
label than the settled one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contam.harness.labels import LABELS
from contam.harness.store.raters import ADJUDICATOR, HUMAN_RATER_SQL, JUDGE_RATER_SQL

__all__ = ["Agreement", "agreement", "disagreements", "agreed_rows", "rater_labels", "LABELS"]


def _standing(raters: str) -> str:
    """``latest_labels`` of the ``raters`` (an SQL condition): the latest row per cell and rater,
    none where it is a retraction. Grouped rather than windowed, and filtered first: each of the
    page's five queries reads only its raters' rows (a fifth of the time at 100,000 cells)."""
    return f"""SELECT item_id, model, rater, arg_max(label, seq) AS label,
       arg_max_null(note, seq) AS note, max(seq) AS seq
FROM labels WHERE {raters} GROUP BY ALL HAVING NOT arg_max(coalesce(retracted, false), seq)"""


_HUMANS = _standing(f"{HUMAN_RATER_SQL} AND rater <> '{ADJUDICATOR}'")
_JUDGES = _standing(JUDGE_RATER_SQL)
_SETTLED = _standing(f"rater = '{ADJUDICATOR}'")

_PAIRS_SQL = f"""
WITH h AS ({_HUMANS}), j AS ({_JUDGES})
SELECT a.rater AS rater_a, b.rater AS rater_b, a.label AS label_a, b.label AS label_b, count(*) AS n
FROM h a JOIN {{other}} b USING (item_id, model) {{where}} GROUP BY ALL
"""

_FLEISS_SQL = f"""
WITH h AS ({_HUMANS}),
cells AS (SELECT count(*) FILTER (WHERE label = 'right') AS r,
                 count(*) FILTER (WHERE label = 'partial') AS p,
                 count(*) FILTER (WHERE label = 'wrong') AS w, count(*) AS m
          FROM h GROUP BY item_id, model)
SELECT r, p, w, count(*) AS n FROM cells WHERE m = (SELECT count(DISTINCT rater) FROM h)
GROUP BY ALL
"""

_DISAGREEMENTS_SQL = f"""
WITH h AS ({_HUMANS}),
d AS (SELECT item_id, model, max(seq) AS newest FROM h GROUP BY ALL HAVING count(DISTINCT label) > 1)
SELECT d.item_id, d.model FROM d LEFT JOIN ({_SETTLED}) s USING (item_id, model)
WHERE s.seq IS NULL OR s.seq < d.newest
"""

_AGREED_SQL = f"""
WITH h AS ({_HUMANS}),
a AS (SELECT item_id, model, min(label) AS label, string_agg(rater, ', ' ORDER BY rater) AS raters,
             max(seq) AS newest FROM h GROUP BY ALL
      HAVING count(DISTINCT label) = 1 AND count(DISTINCT rater) >= 2)
SELECT a.item_id, a.model, a.label, a.raters FROM a LEFT JOIN ({_SETTLED}) s USING (item_id, model)
WHERE s.seq IS NULL OR (s.seq < a.newest AND s.label <> a.label)
"""


@dataclass(frozen=True)
class Agreement:
    raters: list[str]  # human raters (the adjudicator aside)
    pairs: list[dict[str, Any]]  # Cohen's kappa per pair of human raters
    judges: list[dict[str, Any]]  # Cohen's kappa of each human rater against each judge
    fleiss: dict[str, Any] | None  # over the cells every one of the (3+) raters rated, as the report
    disagreements: int
    agreed: int
    labels: tuple[str, ...] = LABELS  # the confusion tables' rows and columns, in this order


def agreement(store: Any) -> Agreement:
    raters = [r[0] for r in store.query(f"SELECT DISTINCT rater FROM ({_HUMANS}) ORDER BY 1")]
    pairs = _kappas(store.query_dicts(_PAIRS_SQL.format(other="h", where="WHERE a.rater < b.rater")))
    judges = _kappas(store.query_dicts(_PAIRS_SQL.format(other="j", where="")))
    return Agreement(raters=raters, pairs=pairs, judges=judges,
                     fleiss=_fleiss(store) if len(raters) >= 3 else None,
                     disagreements=_count(store, _DISAGREEMENTS_SQL),
                     agreed=_count(store, _AGREED_SQL))


def _count(store: Any, sql: str) -> int:
    return store.query(f"SELECT count(*) FROM ({sql})")[0][0]


def _kappas(counts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (rater_a, rater_b) from their label counts: the report's agreement_row (its
    ``confusion``: rows rater_a's labels, columns rater_b's, in LABELS order) and κ's asymptotic
    95% interval."""
    from contam.harness.report.statistics import named_tests as stats  # scipy and statsmodels: loaded by the first agreement page

    tables: dict[tuple[str, str], list[list[int]]] = {}
    for row in counts:
        table = tables.setdefault((row["rater_a"], row["rater_b"]), [[0] * 3 for _ in LABELS])
        table[LABELS.index(row["label_a"])][LABELS.index(row["label_b"])] += row["n"]
    return [{"rater_a": a, "rater_b": b, **stats.agreement_row(t),
             "kappa_ci": stats.cohen_kappa_interval(t)} for (a, b), t in sorted(tables.items())]


def _fleiss(store: Any) -> dict[str, Any] | None:
    rows = store.query(_FLEISS_SQL)
    if not rows:
        return None
    from contam.harness.report.statistics import named_tests as stats

    table = [[r, p, w] for r, p, w, n in rows for _ in range(n)]
    return {"m": sum(table[0]), "n": len(table), "kappa": stats.fleiss_kappa(table)}


def disagreements(store: Any) -> list[tuple[str, str]]:
    """Cells whose human raters disagree and that are not settled since their latest label."""
    ordered = _DISAGREEMENTS_SQL + "ORDER BY md5(d.item_id || chr(31) || d.model)"
    return [tuple(row) for row in store.query(ordered)]


def agreed_rows(store: Any) -> list[dict[str, Any]]:
    """Cells that two or more human raters labelled, all alike, and that have no adjudicated
    label yet, or an older one than their latest label that says something else."""
    return store.query_dicts(_AGREED_SQL + "ORDER BY item_id, model")


def rater_labels(store: Any, item_id: str, model: str) -> list[dict[str, Any]]:
    """Each human rater's standing label and note on one cell (what the adjudicator weighs)."""
    return store.query_dicts(
        "SELECT rater, label, note FROM latest_labels WHERE item_id = $item AND model = $model "
        f"AND {HUMAN_RATER_SQL} ORDER BY rater",
        {"item": item_id, "model": model})
