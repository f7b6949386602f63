"""One cell's full record for the label and cell pages: its texts, every attempt at it, every
label row it has had (retractions included) and its latest scores. Each query reads that one
cell's rows only."""

from __future__ import annotations

from typing import Any

from contam.harness.store.raters import JUDGE_RATER_SQL
from contam.harness.text import visible

__all__ = ["cell_content", "cell_extras", "cell_record"]

_CONTENT_SQL = """
SELECT a.item_id, a.model, a.answer, a.answer_raw, i.title, i.subset, i.question, i.reference
FROM (SELECT * FROM answers WHERE {answer} ORDER BY seq DESC LIMIT 1) a
LEFT JOIN (SELECT * FROM items WHERE item_id = $item ORDER BY seq DESC LIMIT 1) i USING (item_id)
"""

# ``asked_for``: what the attempt asked, by name: ``answer`` (the model answering the question),
# ``judge:NAME`` (a judge run's call about this answer, ``runs.kind = 'judge'``) or ``probe
# VARIANT``. Every attempt of the cell is asked of the answering model's row, so only the run
# tells a judge's call apart.
_ATTEMPTS_SQL = """
SELECT CASE r.kind WHEN 'judge' THEN 'judge:' || coalesce(r.judge, '?')
                   WHEN 'probe' THEN trim('probe ' || coalesce(t.variant, ''))
                   ELSE 'answer' END AS asked_for,
       t.run_id, t.attempt, t.started_at, t.latency_s, t.outcome, t.http_status, t.retry_after_s,
       t.error, t.replica, a.served_model
FROM attempts t
LEFT JOIN (SELECT run_id, served_model FROM answers WHERE item_id = $item AND model = $model) a
       ON a.run_id = t.run_id AND t.outcome = 'ok'
LEFT JOIN (SELECT run_id, any_value(kind) AS kind, any_value(config->>'$.judge.name') AS judge
           FROM runs GROUP BY run_id) r ON r.run_id = t.run_id
WHERE t.item_id = $item AND t.model = $model
ORDER BY t.started_at, t.attempt
"""

_ANSWERS_SQL = """
SELECT run_id, provider, provider_model, served_model, finish_reason, input_tokens, output_tokens,
       latency_s, created_at
FROM answers WHERE item_id = $item AND model = $model ORDER BY seq
"""

_LABELS_SQL = """
SELECT rater, label, note, coalesce(retracted, false) AS retracted, created_at, source_file, run_id
FROM labels WHERE item_id = $item AND model = $model ORDER BY seq
"""


def _key(item_id: str, model: str) -> dict[str, str]:
    return {"item": item_id, "model": model}


def cell_content(store: Any, item_id: str, model: str,
                 answer_seq: int | None = None) -> dict[str, Any] | None:
    """The texts of one cell, as a page shows them: its item (title, subset, question, reference)
    and latest answer (found by its ``seq`` when the caller knows it: one row group read, not the
    table); None when the cell has no answer."""
    if answer_seq is None:
        where, params = "item_id = $item AND model = $model", _key(item_id, model)
    else:
        where, params = "seq = $seq", {"item": item_id, "seq": answer_seq}
    rows = store.query_dicts(_CONTENT_SQL.format(answer=where), params)
    return _shown(rows[0]) if rows else None


_TEXTS = ("title", "question", "reference", "answer", "answer_raw")


def _shown(content: dict[str, Any]) -> dict[str, Any]:
    """The texts with bidi, zero-width and control characters as visible escapes (``\\u202e``),
    as `contam sql` prints them: an answer must not reverse or hide what a rater reads."""
    return {**content, **{k: visible(content[k]) for k in _TEXTS if content[k] is not None}}


def cell_extras(store: Any, item_id: str, model: str) -> dict[str, Any]:
    """What unblinded pages show beside the texts: the latest scores and the judges' labels."""
    key = _key(item_id, model)
    scores = dict(store.query("SELECT metric, arg_max_null(value, seq) FROM scores WHERE item_id = $item "
                              "AND model = $model GROUP BY metric ORDER BY metric", key))
    judges = store.query("SELECT rater, label FROM latest_labels WHERE item_id = $item AND "
                         f"model = $model AND {JUDGE_RATER_SQL} ORDER BY rater", key)
    return {"bleu2": scores.get("bleu2"), "bertscore_f1": scores.get("bertscore_f1"),
            "scores": scores, "judges": judges, "judge": judges[0][1] if judges else None}


def cell_record(store: Any, item_id: str, model: str) -> dict[str, Any] | None:
    """Everything the cell page shows; None for a cell the store has no answer to."""
    content = cell_content(store, item_id, model)
    if content is None:
        return None
    key = _key(item_id, model)
    return {**content, **cell_extras(store, item_id, model),
            "attempts": store.query_dicts(_ATTEMPTS_SQL, key),
            "answers": store.query_dicts(_ANSWERS_SQL, key),
            "labels": store.query_dicts(_LABELS_SQL, key)}
