"""A cell is one (item, model) pair: the latest answer of ``model`` to ``item`` (with the item's
latest reference). This module is the one place that says, in SQL, which cells each job still
has to do: unanswered (``contam run``), unjudged (``contam judge``), unscored (``contam score``),
and for ``contam probe`` the samples a cell still lacks, the complete cells not scored yet and
the items min-k has not scored.
The ``cells`` view (migration 2 of :mod:`contam.harness.store.store`) is the read side of the same pairs.
Each function takes the job's :class:`Store`, so that jobs ask by name (ARCHITECTURE.md, The store).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from tempfile import SpooledTemporaryFile
from typing import TYPE_CHECKING, Any

from contam.harness.store.memory import within_bounds

if TYPE_CHECKING:
    from contam.harness.store.store import Store

__all__ = ["count_unanswered", "unanswered", "item_columns", "unjudged", "answered_cells", "unscored",
           "DueCells", "DUE_MEMORY", "PENDING_MEMORY", "item_ranges", "any_answered",
           "first_items", "unscored_items", "Expected", "missing_samples", "complete_unscored",
           "probe_texts"]

_PAGE = 2048  # items a page of a run's pending work holds: its task list is never held whole
_SEQ_BYTES = 8  # a pending item's seq in the spool (a signed 64-bit integer)
_SPOOL_BYTES = 1 << 20  # the pending seqs a run holds in memory (131,072); more go to a file
# DuckDB's memory limits while it finds a run's pending items, tried in turn (None: its own).
PENDING_MEMORY = ("32MB", "64MB", None)

# -- the scope: the first ``limit`` items in file order (all when None) -------------------------

_SCOPED_SQL = """
WITH ordered AS (SELECT item_id, min(seq) AS first_seq FROM items GROUP BY item_id),
     scope AS (SELECT * FROM ordered ORDER BY first_seq {limit})
SELECT {columns}
FROM scope s JOIN latest_items i USING (item_id)
{where}
{order}
"""

# The columns of an item as a probe reads it: (item_id, title, subset, question, reference, extra).
_ITEM_COLUMNS = "i.item_id, i.title, i.subset, i.question, i.reference, i.extra::VARCHAR"


def _scoped_sql(columns: str, where: str, limit: int | None, *, order: bool = True) -> str:
    """``columns`` of the items in scope (``s``: the scope, ``i``: the latest item) that meet
    ``where``, in item order when ``order``."""
    return _SCOPED_SQL.format(columns=columns, where=where, limit="LIMIT $limit" if limit else "",
                              order="ORDER BY s.first_seq" if order else "")


def _scoped_params(limit: int | None, **params: Any) -> dict[str, Any]:
    return {**params, "limit": limit} if limit else params


# -- run: the items a model has no answer to ----------------------------------------------------

# The latest row of each unanswered item in scope, in item order: narrow on purpose. Joined with
# ``latest_items`` (a window over every column of every item) the same question had DuckDB hold
# hundreds of MB at a million items before the first row came back.
_UNANSWERED_SEQS = """
WITH ordered AS (SELECT item_id, min(seq) AS first_seq, max(seq) AS last_seq
                 FROM items GROUP BY item_id),
     scope AS (SELECT * FROM ordered ORDER BY first_seq {limit})
SELECT {columns} FROM scope s
WHERE NOT EXISTS (SELECT 1 FROM answers a WHERE a.model = $model AND a.item_id = s.item_id)
{order}
"""

# The item rows of one page of those seqs, in the page's order. The range of the page's seqs is
# filtered in the scan of items, which then reads the few row groups that hold them, not all.
_ITEMS_BY_SEQ = """
SELECT i.item_id, i.title, i.subset, i.question, i.extra::VARCHAR
FROM (SELECT unnest($seqs) AS seq, unnest(range(len($seqs))) AS ord) p JOIN items i USING (seq)
WHERE i.seq BETWEEN $low AND $high
ORDER BY p.ord
"""


def _unanswered_sql(columns: str, limit: int | None, *, order: bool) -> str:
    return _UNANSWERED_SEQS.format(columns=columns, limit="LIMIT $limit" if limit else "",
                                   order="ORDER BY s.first_seq" if order else "")


def count_unanswered(store: Store, model: str, limit: int | None) -> int:
    """Items among the first ``limit`` (all when None) that ``model`` has no answer to."""
    sql = _unanswered_sql("count(*)", limit, order=False)
    params = _scoped_params(limit, model=model)
    return within_bounds(store, PENDING_MEMORY,
                         lambda: store.query(sql, params)[0][0])  # leaves no open result


def unanswered(store: Store, model: str, limit: int | None, *,
               page: int = _PAGE) -> Iterator[tuple[str, str | None, str | None, str | None, Any]]:
    """(item_id, title, subset, question, extra JSON text) of those items, lazily, in item order,
    ``page`` items at a time. The pending items' seqs go to a spool (a temporary file past
    ``_SPOOL_BYTES``), read back a page at a time, and their columns are read page by page: what
    the run holds is a page, however many items are pending. Each read is on a cursor of its
    own: the run's writer commits through ``store.con`` between two pages, and an execute there
    discards any result open on it."""
    sql = _unanswered_sql("s.last_seq", limit, order=True)
    with _spooled_seqs(store, sql, _scoped_params(limit, model=model)) as spool:
        while seqs := array("q", spool.read(page * _SEQ_BYTES)).tolist():
            yield from store.con.cursor().execute(
                _ITEMS_BY_SEQ, {"seqs": seqs, "low": min(seqs), "high": max(seqs)}).fetchall()


def _spooled_seqs(store: Store, sql: str, params: dict[str, Any]) -> SpooledTemporaryFile:
    """The single integer column of ``sql``, fetched a page at a time into a spool (memory up to
    ``_SPOOL_BYTES``, then a temporary file, gone once closed), rewound for reading; DuckDB's
    memory bounded meanwhile (``PENDING_MEMORY``: its aggregate over every item and its sort
    spill beyond it)."""
    return within_bounds(store, PENDING_MEMORY,
                         lambda: _spool(store.con.cursor().execute(sql, params)))


def _spool(cursor: Any) -> SpooledTemporaryFile:
    spool = SpooledTemporaryFile(max_size=_SPOOL_BYTES)
    try:
        while rows := cursor.fetchmany(_PAGE):
            spool.write(array("q", [seq for seq, in rows]).tobytes())
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


_ITEM_COLUMNS_SQL = """
SELECT count(nullif(trim(title), '')) > 0, count(nullif(trim(subset), '')) > 0,
       (SELECT coalesce(list(DISTINCT k ORDER BY k), []) FROM (
            SELECT unnest(json_keys(extra)) AS k FROM latest_items WHERE extra IS NOT NULL))
FROM latest_items"""


def item_columns(store: Store) -> list[str]:
    """The columns a study's template may name: title and subset where any item has one, the
    question, and every extra column any item holds."""
    titles, subsets, extras = store.query(_ITEM_COLUMNS_SQL)[0]
    return [*(["title"] if titles else []), *(["subset"] if subsets else []), "question", *extras]


# -- judge: cells without an up-to-date label from this rater under this rubric -----------------

_UNJUDGED_SQL = """
WITH first_seen AS (SELECT item_id, min(seq) AS first_seq FROM items GROUP BY item_id)
SELECT a.item_id, a.model, i.reference, a.answer
FROM latest_answers a
LEFT JOIN latest_items i USING (item_id)
LEFT JOIN first_seen f USING (item_id)
LEFT JOIN latest_labels l ON l.item_id = a.item_id AND l.model = a.model AND l.rater = $rater
WHERE NOT coalesce(l.rubric_sha256 = $rubric AND l.seq > greatest(a.seq, coalesce(i.seq, 0)), false)
  {models}
ORDER BY f.first_seq NULLS LAST, a.item_id, a.model
"""


def unjudged(store: Store, rater: str, rubric: str,
             models: Sequence[str] | None = None) -> list[tuple]:
    """(item_id, model, reference, answer) of each cell whose latest label from ``rater`` is
    missing, under another rubric, or older than the cell's answer or reference; item order."""
    params: dict[str, Any] = {"rater": rater, "rubric": rubric}
    where = ""
    if models:
        params["models"], where = list(models), "AND list_contains($models, a.model)"
    return store.query(_UNJUDGED_SQL.format(models=where), params)


# -- score: cells without an up-to-date score of this metric under these params -----------------

_ANSWERED_CELLS_SQL = """
SELECT a.item_id, a.model, a.answer, i.reference, greatest(a.seq, coalesce(i.seq, 0)) AS source_seq
FROM latest_answers a LEFT JOIN latest_items i USING (item_id)
"""

# A cell's score is up to date: newer than its answer and its item, and under these params.
_SCORE_UP_TO_DATE = "s.seq > greatest(a.seq, coalesce(i.seq, 0)) AND json(s.params) = json($params)"

_DUE = f"""
LEFT JOIN latest_scores s ON s.item_id = a.item_id AND s.model = a.model AND s.metric = $metric
WHERE NOT coalesce({_SCORE_UP_TO_DATE}, false)
"""

_UNSCORED_SQL = _ANSWERED_CELLS_SQL + _DUE


# A score pass works through the cells by ranges of item ids, each holding about this many
# cells: DuckDB's work (the latest answer, item and score of each cell) is bounded by one range,
# never the whole store, so the pass's memory is flat in the number of cells.
_RANGE_CELLS = 20_000
# DuckDB's memory limit while a pass works through the ranges: one range's work fits well within
# it, and it keeps DuckDB's buffer pool from caching every block the pass reads and writes.
DUE_MEMORY = "64MB"
_SAMPLE_PER_RANGE = 64  # sampled item ids per range: the bounds split the cells about evenly

# The cells of one range of item ids ({range}) with their latest answer, item and ``metric`` score
# (the latest_* views' rule: the highest seq wins), and whether that score is up to date. The
# range is filtered in each table's scan, before its window, which is what bounds the work.
_RANGE_CELLS_SQL = """
WITH a AS (SELECT item_id, model, answer, seq FROM answers WHERE {range}
           QUALIFY row_number() OVER (PARTITION BY item_id, model ORDER BY seq DESC) = 1),
i AS (SELECT item_id, reference, seq FROM items WHERE {range}
      QUALIFY row_number() OVER (PARTITION BY item_id ORDER BY seq DESC) = 1),
s AS (SELECT item_id, model, params, seq FROM scores WHERE metric = $metric AND {range}
      QUALIFY row_number() OVER (PARTITION BY item_id, model ORDER BY seq DESC) = 1),
cell AS (SELECT a.item_id, a.model, a.answer, i.reference,
                greatest(a.seq, coalesce(i.seq, 0)) AS source_seq,
                coalesce({up_to_date}, false) AS done
         FROM a LEFT JOIN i USING (item_id) LEFT JOIN s USING (item_id, model))
""".replace("{up_to_date}", _SCORE_UP_TO_DATE)

_RANGE_COUNTS = "SELECT count(*), count(*) FILTER (WHERE NOT done) FROM cell"
_RANGE_DUE = ("SELECT item_id, model, answer, reference, source_seq FROM cell WHERE NOT done "
              "ORDER BY item_id, model")


class DueCells:
    """The cells :func:`unscored` names, in the same order, counted when made and read a range of
    item ids at a time (about ``per_range`` cells; each read on a cursor of its own): memory is
    bounded by a range, however many cells the store holds. Scores appended for one range change
    no other range's cells, so the counts stay true while the pass writes."""

    def __init__(self, store: Store, metric: str, params_json: str, *,
                 per_range: int | None = None) -> None:
        self.store, self.params = store, {"metric": metric, "params": params_json}
        self.ranges = item_ranges(store, per_range or _RANGE_CELLS)
        counts = [self._read(where, _RANGE_COUNTS)[0] for where in self.ranges]
        self.answered = sum(answered for answered, _ in counts)  # every cell with an answer
        self.due = [due for _, due in counts]

    def __len__(self) -> int:
        return sum(self.due)

    def chunks(self, size: int) -> Iterator[list[tuple]]:
        """(item_id, model, answer, reference, source_seq) rows, ``size`` at a time (the last
        chunk fewer)."""
        held: list[tuple] = []
        for (where, params), due in zip(self.ranges, self.due):
            held.extend(self._read((where, params), _RANGE_DUE) if due else ())
            while len(held) >= size:
                yield held[:size]
                del held[:size]
        if held:
            yield held

    def _read(self, where: tuple[str, dict[str, str]], select: str) -> list[tuple]:
        sql = _RANGE_CELLS_SQL.format(range=where[0]) + select
        return _on_own_cursor(self.store, sql, {**self.params, **where[1]})


def item_ranges(store: Store, per_range: int, table: str = "answers") -> list[tuple[str, dict[str, str]]]:
    """(SQL condition on item_id, its parameters) of each range, in item id order: the bounds are
    quantiles of a sample of ``table``'s item ids, so each range holds about ``per_range`` of its
    rows (one range where the table holds no more)."""
    rows = store.query(f"SELECT count(*) FROM {table}")[0][0]
    count = -(-rows // per_range)
    if count <= 1:
        return [("true", {})]
    sample = sorted(item for (item,) in store.query(
        f"SELECT item_id FROM {table} USING SAMPLE reservoir({count * _SAMPLE_PER_RANGE} ROWS)"))
    bounds = sorted({sample[len(sample) * k // count] for k in range(1, count)})
    conditions = [("item_id < $high", {"high": bounds[0]})]
    conditions += [("item_id >= $low AND item_id < $high", {"low": low, "high": high})
                   for low, high in zip(bounds, bounds[1:])]
    return conditions + [("item_id >= $low", {"low": bounds[-1]})]


def any_answered(store: Store) -> bool:
    """Whether any cell has an answer."""
    return store.query("SELECT EXISTS (SELECT 1 FROM answers)")[0][0]


def answered_cells(store: Store) -> list[tuple]:
    """(item_id, model, answer, reference, source_seq) of every answered cell."""
    return store.query(_ANSWERED_CELLS_SQL + "ORDER BY a.item_id, a.model")


def unscored(store: Store, metric: str, params_json: str) -> list[tuple]:
    """The answered cells whose latest ``metric`` score is missing, has other params, or is older
    than the cell's answer or reference."""
    params = {"metric": metric, "params": params_json}
    return store.query(_UNSCORED_SQL + "ORDER BY a.item_id, a.model", params)


# -- probe: the samples each (item, model, prompt) still lacks; complete cells not yet scored ---

def first_items(store: Store, limit: int | None) -> list[tuple]:
    """(item_id, title, subset, question, reference, extra JSON) of the first ``limit`` items
    (all when None) in file order: a probe's scope."""
    return _on_own_cursor(store, _scoped_sql(_ITEM_COLUMNS, "", limit), _scoped_params(limit))


_UNSCORED_ITEM = """WHERE NOT EXISTS (SELECT 1 FROM probe_scores p
                  WHERE p.probe = $probe AND p.model = $model AND p.params_sha256 = $params
                    AND p.metric = $metric AND p.item_id = s.item_id)"""


def unscored_items(store: Store, *, probe: str, metric: str, model: str,
                   params_sha256: str, limit: int | None) -> list[tuple]:
    """(item_id, title, subset, question, reference) of the items in scope without a ``metric``
    score of ``model`` under these params, in item order: what min-k still scores (one score
    row per item, so no samples to count)."""
    params = _scoped_params(limit, probe=probe, metric=metric, model=model, params=params_sha256)
    return store.query(_scoped_sql(_ITEM_COLUMNS, _UNSCORED_ITEM, limit), params)


# What a probe asks of each item: (item_id, variant, samples) rows, in item order. A probe
# builds them from its prompts; they travel as three list parameters. An item the probe asks
# nothing of (no word to mask) is one row with 0 samples: complete at once, and scored.
Expected = Sequence[tuple[str, str, int]]

_EXPECTED_CTE = """
expected AS (SELECT unnest(range(len($items))) AS ord, unnest($items) AS item_id,
                    unnest($variants) AS variant, unnest($counts) AS samples)"""

_MISSING_SQL = f"""
WITH {_EXPECTED_CTE},
wanted AS (SELECT ord, item_id, variant, unnest(range(samples)) AS sample FROM expected)
SELECT item_id, variant, list(sample::INTEGER ORDER BY sample) AS missing
FROM wanted w
WHERE NOT EXISTS (SELECT 1 FROM probe_samples s
                  WHERE s.probe = $probe AND s.params_sha256 = $sha AND s.model = $model
                    AND s.item_id = w.item_id AND s.variant = w.variant AND s.sample = w.sample)
GROUP BY ord, item_id, variant
ORDER BY ord
"""


def _expected_params(expected: Expected) -> dict[str, list]:
    return {"items": [e[0] for e in expected], "variants": [e[1] for e in expected],
            "counts": [e[2] for e in expected]}


def missing_samples(store: Store, *, probe: str, params_sha256: str,
                    model: str, expected: Expected) -> list[tuple[str, str, list[int]]]:
    """(item_id, variant, the sample numbers it lacks) of each prompt of ``expected`` that
    ``model`` has not answered ``samples`` times under these params, in item order: a resumed
    probe asks exactly these."""
    params = {**_expected_params(expected), "probe": probe, "sha": params_sha256, "model": model}
    return [(item, variant, list(missing))
            for item, variant, missing in _on_own_cursor(store, _MISSING_SQL, params)]


_COMPLETE_UNSCORED_SQL = f"""
WITH {_EXPECTED_CTE},
need AS (SELECT item_id, min(ord) AS ord, sum(samples) AS n FROM expected GROUP BY item_id),
have AS (SELECT s.item_id, s.model, count(DISTINCT (s.variant, s.sample)) AS n, max(s.seq) AS last_seq
         FROM probe_samples s JOIN expected e USING (item_id, variant)
         WHERE s.probe = $probe AND s.params_sha256 = $sha AND list_contains($models, s.model)
           AND s.sample < e.samples
         GROUP BY ALL),
grid AS (SELECT need.*, m.model FROM need CROSS JOIN (SELECT unnest($models) AS model) m)
SELECT g.item_id, g.model
FROM grid g LEFT JOIN have h USING (item_id, model)
WHERE coalesce(h.n, 0) = g.n
  AND NOT EXISTS (SELECT 1 FROM probe_scores sc
                  WHERE sc.probe = $probe AND sc.params_sha256 = $sha AND sc.item_id = g.item_id
                    AND sc.model = g.model AND sc.seq > coalesce(h.last_seq, 0))
ORDER BY g.ord, g.model
"""


def complete_unscored(store: Store, *, probe: str, params_sha256: str,
                      models: Sequence[str], expected: Expected) -> list[tuple[str, str]]:
    """(item_id, model) of each cell that has every sample ``expected`` asks for (an item asked
    nothing has them all) and no score newer than its newest sample, in item order."""
    params = {**_expected_params(expected), "probe": probe, "sha": params_sha256,
              "models": list(models)}
    return store.query(_COMPLETE_UNSCORED_SQL, params)


_PROBE_TEXTS_SQL = """
SELECT item_id, model, variant, sample, text FROM latest_probe_samples
WHERE probe = $probe AND params_sha256 = $sha AND list_contains($models, model)
  AND list_contains($items, item_id)
ORDER BY item_id, model, variant, sample
"""


def probe_texts(store: Store, *, probe: str, params_sha256: str,
                models: Sequence[str], items: Sequence[str]) -> list[tuple]:
    """(item_id, model, variant, sample, text) of those items' and models' samples, ordered."""
    params = {"probe": probe, "sha": params_sha256, "models": list(models), "items": list(items)}
    return store.query(_PROBE_TEXTS_SQL, params)


def _on_own_cursor(store: Store, sql: str, params: dict[str, Any]) -> list[tuple]:
    """All rows of ``sql``, read on a cursor of its own so that nothing open on ``store.con``
    is disturbed."""
    return store.con.cursor().execute(sql, params).fetchall()
