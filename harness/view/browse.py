"""The browse page's query: every answered cell with its labels, scores and judge, filtered and
sorted in the database, and only the page's rows fetched.

It reads the tables, not the ``cells`` view (which builds every column of every cell before a
page can be cut from it): each filter goes into the narrow subquery it concerns, the sort runs
over keys and the sorted column, and its order (one number a cell) is kept until the tables grow,
so that the next page, or the same page again, only joins the texts to its own 50 rows.
Labels come from ``latest_labels`` (so a retracted label is none); a score is the latest row of
its metric, as ``latest_scores`` has it, taken by ``arg_max_null`` (three times cheaper here).
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from contam.harness.labels import LABELS
from contam.harness.store.raters import HUMAN_RATER_SQL, JUDGE_RATER_SQL
from contam.harness.view.follow import store_version

__all__ = ["BrowseQuery", "BrowsePage", "OrderCache", "browse", "filter_choices", "COLUMNS", "PAGE_SIZE",
           "LABEL_FILTERS"]

PAGE_SIZE = 50
# Sortable columns: name -> (heading, SQL over the keyed rows)
COLUMNS: dict[str, tuple[str, str]] = {
    "item_id": ("Item", "item_id"), "title": ("Title", "title"),
    "subset": ("Subset", "subset"), "model": ("Model", "model"),
    "reference": ("Reference", "reference"),
    "answer": ("Answer", "answer"), "human": ("Human labels", "human_score"),
    "judge": ("Judge", "judge_label"), "bleu2": ("BLEU-2", "sort_score"),
    "bertscore_f1": ("BERTScore-F1", "sort_score"),
}
LABEL_FILTERS = (*LABELS, "none")
MAX_PAGE = 10**9  # a deeper link is the last page; any number beyond would overflow the offset


@dataclass(frozen=True, kw_only=True)
class BrowseQuery:
    """What the page's form and links ask for; anything unknown falls back to the default."""

    subset: str = ""
    title: str = ""
    field: str = ""  # an extra item column (cells.fields); alone: items that have it
    value: str = ""  # ... equal to this text (a number as written: 6.2)
    model: str = ""
    rater: str = ""  # "" = any human rater
    label: str = ""  # right / partial / wrong / none (no label from that rater)
    disagree: bool = False  # the judge's label differs from the human's
    sort: str = "item_id"
    desc: bool = False
    page: int = 1

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> "BrowseQuery":
        text = {name: params.get(name, "").strip()
                for name in ("subset", "title", "field", "value", "model", "rater")}
        page = params.get("page", "1")
        return cls(**text, label=params.get("label", "") if params.get("label") in LABEL_FILTERS else "",
                   disagree=params.get("disagree") == "1",
                   sort=params.get("sort") if params.get("sort") in COLUMNS else "item_id",
                   desc=params.get("desc") == "1", page=_page_number(page))

    def params(self, **changes: Any) -> dict[str, str]:
        """This query (with changes) as URL parameters, defaults left out."""
        query = replace(self, **changes)
        values = {"subset": query.subset, "title": query.title, "field": query.field,
                  "value": query.value if query.field else "", "model": query.model,
                  "rater": query.rater, "label": query.label, "disagree": "1" if query.disagree else "",
                  "sort": "" if query.sort == "item_id" else query.sort,
                  "desc": "1" if query.desc else "",
                  "page": "" if query.page == 1 else str(query.page)}
        return {k: v for k, v in values.items() if v}


@dataclass(frozen=True)
class BrowsePage:
    rows: list[dict[str, Any]]
    total: int
    query: BrowseQuery

    @property
    def pages(self) -> int:
        return _page_count(self.total)


def _page_number(given: str) -> int:
    """``?page=`` as a page from 1 to MAX_PAGE; anything that is not a whole number is page 1."""
    return min(max(1, int(given)), MAX_PAGE) if given.isascii() and given.isdigit() else 1


def _page_count(total: int) -> int:
    return max(1, -(-total // PAGE_SIZE))


# Each part is a subquery keyed by (item_id, model) over {source}: the whole table while it
# decides the filter or the order, or only the page's rows once the page is cut. Labels follow
# latest_labels (the latest row per rater; a retracted one is no label), scores latest_scores.
def _standing(raters: str) -> str:
    """Each standing label of the ``raters`` (an SQL condition) per cell of ``{source}``."""
    return ("(SELECT item_id, model, rater, arg_max(label, seq) AS label FROM {source}\n"
            f"      WHERE {raters} GROUP BY ALL HAVING NOT arg_max(coalesce(retracted, false), seq))")


# Sorted by human_score: the labels' mean on wrong 0, partial 0.5, right 1 (the joined text
# would sort by the raters' names).
_HUMAN = f"""SELECT item_id, model,
       string_agg(replace(rater, 'human:', '') || ': ' || label, ', ' ORDER BY rater) AS human_labels,
       avg(CASE label WHEN 'right' THEN 1.0 WHEN 'partial' THEN 0.5 ELSE 0.0 END) AS human_score
FROM {_standing(HUMAN_RATER_SQL)} GROUP BY ALL"""
# What the label and disagreement filters test: the labels of the chosen rater (or of any human).
_RATED = f"""SELECT item_id, model, bool_or(label = $label) AS label_match,
       count(*) AS rater_labels, list(label) AS rater_label_list
FROM {_standing("{rater_match}")} GROUP BY ALL"""
_JUDGE = f"""SELECT item_id, model, arg_min(label, rater) AS judge_label
FROM {_standing(JUDGE_RATER_SQL)} GROUP BY ALL"""
_SCORES = """SELECT item_id, model,
       arg_max_null(value, seq) FILTER (WHERE metric = 'bleu2') AS bleu2,
       arg_max_null(value, seq) FILTER (WHERE metric = 'bertscore_f1') AS bertscore_f1
FROM {source} WHERE metric IN ('bleu2', 'bertscore_f1') GROUP BY ALL"""
# Sorting by a score needs that one metric of every cell, not both (half the rows to group).
_SORTED_SCORE = """SELECT item_id, model, arg_max_null(value, seq) AS sort_score
FROM {source} WHERE metric = $sort_metric GROUP BY ALL"""
_ANSWER = "SELECT seq AS answer_seq, answer FROM {source}"
_CELL_ROWS = "(SELECT * FROM {table} SEMI JOIN page USING (item_id, model))"
# name -> (subquery, its rows when only the page's are needed, join key, columns)
_PARTS = {
    "rated": (_RATED, "", "item_id, model", ("label_match", "rater_labels", "rater_label_list")),
    "human": (_HUMAN, _CELL_ROWS.format(table="labels"), "item_id, model",
              ("human_labels", "human_score")),
    "judge": (_JUDGE, _CELL_ROWS.format(table="labels"), "item_id, model", ("judge_label",)),
    "scores": (_SCORES, _CELL_ROWS.format(table="scores"), "item_id, model", ("bleu2", "bertscore_f1")),
    "sorted_score": (_SORTED_SCORE, "", "item_id, model", ("sort_score",)),
    "answer": (_ANSWER, "(SELECT * FROM answers WHERE seq IN (SELECT answer_seq FROM page))",
               "answer_seq", ("answer",)),
}
_TABLES = {"rated": "labels", "human": "labels", "judge": "labels", "scores": "scores",
           "sorted_score": "scores", "answer": "answers"}
_SHOWN = ("human", "judge", "scores", "answer")  # the parts every page row shows
_NEEDED_BY_SORT = {"human": "human", "judge": "judge", "bleu2": "sorted_score",
                   "bertscore_f1": "sorted_score",
                   "answer": "answer"}

_CTES = """
WITH a AS (SELECT item_id, model, max(seq) AS answer_seq FROM answers {answer_filter} GROUP BY ALL),
i AS (SELECT item_id, title, subset, reference FROM latest_items {item_filter}),
k AS (SELECT a.*, i.title, i.subset, i.reference{early_columns} FROM a JOIN i USING (item_id){early_joins}
      WHERE {cell_filter})"""
# The order of the cells a filter and sort select, as their latest answers' seq (one number a
# cell): computed once, and kept until the tables grow (OrderCache); a page is then its 50
# numbers' rows alone, and the count is the list's length.
_ORDER_SQL = _CTES + "\nSELECT answer_seq FROM k ORDER BY {order}"
_PAGE_SQL = """
WITH keyed AS (SELECT item_id, model, seq AS answer_seq FROM answers
               WHERE seq IN (SELECT unnest($seqs))),
i AS (SELECT item_id, title, subset, reference FROM latest_items
      WHERE item_id IN (SELECT item_id FROM keyed)),
page AS (SELECT keyed.*, i.title, i.subset, i.reference FROM keyed JOIN i USING (item_id))
SELECT page.item_id, page.model, page.title, page.subset, page.reference, answer,
       human_labels, judge_label, bleu2, bertscore_f1
FROM page{late_joins}
ORDER BY list_position($seqs, page.answer_seq)
"""
_READ = ("items", "answers", "labels", "scores")  # the tables a filter or a sort reads


class OrderCache:
    """Each filter and sort's order of cells, computed again only once the tables have grown
    (they are append-only: the same row counts, the same rows). A few are kept, each an array
    of 8 bytes a cell."""

    def __init__(self, size: int = 8) -> None:
        self._orders: OrderedDict[tuple, array] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def order(self, store: Any, query: BrowseQuery) -> array:
        key = (store_version(store, _READ), replace(query, page=1))
        with self._lock:
            if key in self._orders:
                self._orders.move_to_end(key)
                return self._orders[key]
        order = _order(store, query)
        with self._lock:
            self._orders[key] = order
            while len(self._orders) > self._size:
                self._orders.popitem(last=False)
        return order


def browse(store: Any, query: BrowseQuery, orders: OrderCache | None = None) -> BrowsePage:
    """One page of cells; a page past the end is the last page."""
    order = (orders or OrderCache()).order(store, query)
    query = replace(query, page=min(query.page, _page_count(len(order))))
    start = (query.page - 1) * PAGE_SIZE
    seqs = order[start:start + PAGE_SIZE].tolist()
    if not seqs:
        return BrowsePage([], 0, query)
    late_joins = "".join(_join(name, query, whole=False) for name in _SHOWN)
    rows = store.query_dicts(_PAGE_SQL.format(late_joins=late_joins), {"seqs": seqs})
    return BrowsePage(rows, len(order), query)


def _order(store: Any, query: BrowseQuery) -> array:
    sql, params = _statement(query, _ORDER_SQL)
    return array("q", (row[0] for row in store.query(sql, params)))


def _statement(query: BrowseQuery, template: str) -> tuple[str, dict[str, Any]]:
    early = _early_parts(query)
    column, direction = COLUMNS[query.sort][1], "DESC" if query.desc else "ASC"
    items = [f"{name} = ${name}" for name in ("subset", "title") if getattr(query, name)]
    if query.field:  # a JSON pointer into items.extra: any key, no SQL built from it
        items.append("json_extract_string(extra, $field_pointer) "
                     + ("= $field_value" if query.value else "IS NOT NULL"))
    sql = template.format(
        answer_filter="WHERE model = $model" if query.model else "",
        item_filter="WHERE " + " AND ".join(items) if items else "",
        early_columns="".join(f", {name}.{c}" for name in early for c in _PARTS[name][3]),
        early_joins="".join(_join(name, query, whole=True) for name in early),
        cell_filter=_cell_filter(query),
        order=f"{column} {direction} NULLS LAST, item_id, model")
    return sql, _params(query, early)


def _params(query: BrowseQuery, early: list[str]) -> dict[str, Any]:
    """The statement's named parameters: only those it uses (DuckDB refuses the others)."""
    params: dict[str, Any] = {}
    params.update({name: getattr(query, name) for name in ("model", "subset", "title")
                   if getattr(query, name)})
    if query.field:
        params["field_pointer"] = "/" + query.field.replace("~", "~0").replace("/", "~1")
        if query.value:
            params["field_value"] = query.value
    if "sorted_score" in early:
        params["sort_metric"] = query.sort
    if "rated" in early:
        params["label"] = query.label
        if query.rater:
            params["rater"] = query.rater
    return params


def _early_parts(query: BrowseQuery) -> list[str]:
    """The parts the filter or the order needs for every cell."""
    needed = {_NEEDED_BY_SORT.get(query.sort)}
    if query.label:
        needed.add("rated")
    if query.disagree:
        needed |= {"rated", "judge"}
    return [name for name in _PARTS if name in needed]


def _join(name: str, query: BrowseQuery, *, whole: bool) -> str:
    """``LEFT JOIN (part) name USING (key)``, over the whole table or the page's rows alone."""
    sql, page_rows, key, _columns = _PARTS[name]
    source = _TABLES[name] if whole else page_rows
    rater_match = "rater = $rater" if query.rater else HUMAN_RATER_SQL
    part = sql.format(source=source, rater_match=rater_match)
    return f"\n    LEFT JOIN ({part}) {name} USING ({key})"


def _cell_filter(query: BrowseQuery) -> str:
    conditions = ["true"]
    if query.label == "none":
        conditions.append("coalesce(rated.rater_labels, 0) = 0")
    elif query.label:
        conditions.append("coalesce(rated.label_match, false)")
    if query.disagree:
        conditions.append("judge.judge_label IS NOT NULL AND coalesce(rated.rater_labels, 0) > 0 "
                          "AND len(list_distinct(list_append(rated.rater_label_list, "
                          "judge.judge_label))) > 1")
    return " AND ".join(conditions)


def filter_choices(store: Any) -> dict[str, list[str]]:
    """The values each filter offers: subsets, titles, the items' extra columns, models and
    human raters in the store."""
    def values(sql: str) -> list[str]:
        return [row[0] for row in store.query(sql) if row[0] is not None]

    return {"subset": values("SELECT DISTINCT subset FROM latest_items ORDER BY 1"),
            "title": values("SELECT DISTINCT title FROM latest_items ORDER BY 1"),
            "field": values("SELECT DISTINCT unnest(json_keys(extra)) FROM latest_items "
                            "WHERE extra IS NOT NULL ORDER BY 1"),
            "model": values("SELECT DISTINCT model FROM answers ORDER BY 1"),
            "rater": values(f"SELECT DISTINCT rater FROM latest_labels WHERE {HUMAN_RATER_SQL} "
                            "ORDER BY 1")}
