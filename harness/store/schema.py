"""The store's schema: numbered migrations, frozen once shipped (a change is a new entry, never an
edit of an old one), and the columns each table takes. Nothing is ever UPDATEd or DELETEd: a
correction is a newer row (higher ``seq``) and the ``latest_*`` views pick it."""

from __future__ import annotations

__all__ = ["MIGRATIONS", "TABLE_COLUMNS"]

_TABLES = """
CREATE SEQUENCE row_seq;
CREATE TABLE items (
    seq BIGINT DEFAULT nextval('row_seq'), item_id VARCHAR NOT NULL, title VARCHAR,
    subset VARCHAR, question VARCHAR, reference VARCHAR, extra JSON, source_file VARCHAR,
    added_at TIMESTAMP);
CREATE TABLE runs (
    seq BIGINT DEFAULT nextval('row_seq'), run_id VARCHAR NOT NULL, kind VARCHAR,
    started_at TIMESTAMP, finished_at TIMESTAMP, config JSON, prompt_sha256 VARCHAR,
    harness_version VARCHAR);
CREATE TABLE attempts (
    seq BIGINT DEFAULT nextval('row_seq'), run_id VARCHAR, item_id VARCHAR, model VARCHAR,
    attempt INTEGER, started_at TIMESTAMP, latency_s DOUBLE, outcome VARCHAR,
    http_status INTEGER, retry_after_s DOUBLE, error VARCHAR);
CREATE TABLE answers (
    seq BIGINT DEFAULT nextval('row_seq'), run_id VARCHAR, item_id VARCHAR NOT NULL,
    model VARCHAR NOT NULL, provider VARCHAR, provider_model VARCHAR, served_model VARCHAR,
    answer_raw VARCHAR, answer VARCHAR, finish_reason VARCHAR, input_tokens INTEGER,
    output_tokens INTEGER, latency_s DOUBLE, created_at TIMESTAMP);
CREATE TABLE labels (
    seq BIGINT DEFAULT nextval('row_seq'), item_id VARCHAR NOT NULL, model VARCHAR NOT NULL,
    rater VARCHAR NOT NULL, label VARCHAR NOT NULL, rubric_sha256 VARCHAR, run_id VARCHAR,
    source_file VARCHAR, created_at TIMESTAMP);
CREATE TABLE scores (
    seq BIGINT DEFAULT nextval('row_seq'), item_id VARCHAR NOT NULL, model VARCHAR NOT NULL,
    metric VARCHAR NOT NULL, value DOUBLE, params JSON, created_at TIMESTAMP);
"""

# Labels are kept as raters wrote them (after case-normalisation); the views expose one column per
# regime. `human_label` prefers the plain `human` rater, then the first `human:<name>`;
# `judge_label` takes the first `judge:<model>` rater (the report's --judge picks another).
# Frozen as literal SQL: `abstained` holds contam.harness.text.ABSTENTION_PATTERN as it was when this
# migration shipped; a changed pattern is a new migration, so old and new stores cannot differ.
# Likewise the raters (`'judge:%'`, `human:`) are spelt out rather than read from store/raters.py.
_VIEWS = r"""
CREATE OR REPLACE VIEW latest_items AS
    SELECT * EXCLUDE (rn) FROM (SELECT *, row_number() OVER (PARTITION BY item_id ORDER BY seq DESC) AS rn
                               FROM items) WHERE rn = 1;
CREATE OR REPLACE VIEW latest_answers AS
    SELECT * EXCLUDE (rn) FROM (SELECT *, row_number() OVER (PARTITION BY item_id, model ORDER BY seq DESC) AS rn
                               FROM answers) WHERE rn = 1;
CREATE OR REPLACE VIEW latest_labels AS
    SELECT * EXCLUDE (rn) FROM (SELECT *, row_number() OVER (PARTITION BY item_id, model, rater ORDER BY seq DESC) AS rn
                               FROM labels) WHERE rn = 1;
CREATE OR REPLACE VIEW latest_scores AS
    SELECT * EXCLUDE (rn) FROM (SELECT *, row_number() OVER (PARTITION BY item_id, model, metric ORDER BY seq DESC) AS rn
                               FROM scores) WHERE rn = 1;
CREATE OR REPLACE VIEW cells AS
WITH pairs AS (
    SELECT item_id, model FROM latest_answers UNION SELECT item_id, model FROM latest_labels),
human AS (
    SELECT item_id, model, arg_min(label, CASE WHEN rater = 'human' THEN '' ELSE rater END) AS label
    FROM latest_labels WHERE rater = 'human' OR rater LIKE 'human:%' GROUP BY ALL),
judge AS (
    SELECT item_id, model, arg_min(label, rater) AS label
    FROM latest_labels WHERE rater LIKE 'judge:%' GROUP BY ALL),
surface AS (
    SELECT item_id, model,
           max(value) FILTER (WHERE metric = 'bleu2') AS bleu2,
           max(value) FILTER (WHERE metric = 'bertscore_f1') AS bertscore_f1
    FROM latest_scores GROUP BY ALL)
SELECT p.item_id, i.title, i.subset, i.question, i.reference, p.model,
       a.answer, a.answer_raw, h.label AS human_label, j.label AS judge_label,
       s.bleu2, s.bertscore_f1,
       CASE WHEN a.answer IS NULL THEN NULL ELSE len(string_split_regex(trim(a.answer), '\s+'))
            * (trim(a.answer) <> '')::INT END AS answer_words,
       coalesce(regexp_matches(a.answer, '(?i)\b(i\s+(do\s+not|don''?t|cannot|can''?t)\s+(know|recall|remember|say|be\s+sure|answer)|i''?m\s+not\s+(sure|familiar|aware|certain)|i\s+am\s+not\s+(sure|familiar|aware|certain)|i\s+have\s+no\s+(information|knowledge|idea)|i\s+(don''?t|do\s+not)\s+have\s+(information|enough\s+information|any\s+information|knowledge|details)|not\s+familiar\s+with|unable\s+to\s+(answer|provide|recall|determine)|no\s+(reliable\s+)?information\s+(about|on))'), false) AS abstained,
       coalesce(trim(i.reference), '') = '' AS reference_empty
FROM pairs p
LEFT JOIN latest_items i USING (item_id)
LEFT JOIN latest_answers a USING (item_id, model)
LEFT JOIN human h USING (item_id, model)
LEFT JOIN judge j USING (item_id, model)
LEFT JOIN surface s USING (item_id, model);
"""

# Batch jobs (``contam run --batch``): a row per state a job was seen in, the latest one wins. A
# job's first row ("submitting") is committed before it is sent, with its cells in batch_cells
# (line = the number in its custom id); its second, with the provider's job id, the moment the
# provider returns it. ``imported``: its results are in answers/attempts (same transaction).
_BATCHES = """
CREATE TABLE batches (
    seq BIGINT DEFAULT nextval('row_seq'), batch_key VARCHAR NOT NULL, run_id VARCHAR,
    model VARCHAR, provider VARCHAR, provider_model VARCHAR, job_id VARCHAR, status VARCHAR,
    cells INTEGER, succeeded INTEGER, failed INTEGER, error VARCHAR, created_at TIMESTAMP,
    finished_at TIMESTAMP, updated_at TIMESTAMP);
CREATE TABLE batch_cells (
    seq BIGINT DEFAULT nextval('row_seq'), batch_key VARCHAR NOT NULL, line INTEGER NOT NULL,
    item_id VARCHAR NOT NULL, model VARCHAR NOT NULL);
CREATE OR REPLACE VIEW latest_batches AS
    SELECT * EXCLUDE (rn) FROM (SELECT *, row_number() OVER (PARTITION BY batch_key ORDER BY seq DESC) AS rn
                               FROM batches) WHERE rn = 1;
"""

# Contamination probes (``contam probe``): each probe's parameters once, under their hash; every
# completion a probe asked for as a row of its own (keyed so that a resumed probe asks exactly the
# missing ones); and what each probe made of an (item, model) cell. A probe asks several requests
# per cell, so its attempts (and batch lines) also name the prompt (``variant``) and the sample
# numbers they asked for; ``batches.purpose`` keeps a probe's batch jobs apart from a run's.
_PROBES = """
ALTER TABLE attempts ADD COLUMN variant VARCHAR;
ALTER TABLE attempts ADD COLUMN samples INTEGER[];
ALTER TABLE batches ADD COLUMN purpose VARCHAR;
ALTER TABLE batch_cells ADD COLUMN variant VARCHAR;
ALTER TABLE batch_cells ADD COLUMN samples INTEGER[];
CREATE TABLE probe_params (
    seq BIGINT DEFAULT nextval('row_seq'), params_sha256 VARCHAR NOT NULL, probe VARCHAR NOT NULL,
    params JSON, created_at TIMESTAMP);
CREATE TABLE probe_samples (
    seq BIGINT DEFAULT nextval('row_seq'), run_id VARCHAR, probe VARCHAR NOT NULL,
    params_sha256 VARCHAR NOT NULL, item_id VARCHAR NOT NULL, model VARCHAR NOT NULL,
    variant VARCHAR NOT NULL, sample INTEGER NOT NULL, provider VARCHAR, provider_model VARCHAR,
    served_model VARCHAR, prompt_sha256 VARCHAR, text_raw VARCHAR, text VARCHAR,
    finish_reason VARCHAR, input_tokens INTEGER, output_tokens INTEGER, latency_s DOUBLE,
    detail JSON, created_at TIMESTAMP);
CREATE TABLE probe_scores (
    seq BIGINT DEFAULT nextval('row_seq'), run_id VARCHAR, probe VARCHAR NOT NULL,
    params_sha256 VARCHAR NOT NULL, item_id VARCHAR NOT NULL, model VARCHAR NOT NULL,
    metric VARCHAR NOT NULL, value DOUBLE, detail JSON, created_at TIMESTAMP);
CREATE OR REPLACE VIEW latest_probe_samples AS
    SELECT * EXCLUDE (rn) FROM (SELECT *, row_number() OVER (
        PARTITION BY probe, params_sha256, item_id, model, variant, sample ORDER BY seq DESC) AS rn
        FROM probe_samples) WHERE rn = 1;
CREATE OR REPLACE VIEW latest_probe_scores AS
    SELECT * EXCLUDE (rn) FROM (SELECT *, row_number() OVER (
        PARTITION BY probe, params_sha256, item_id, model, metric ORDER BY seq DESC) AS rn
        FROM probe_scores) WHERE rn = 1;
"""

# Labelling in the browser (``contam view``): a rater's note travels with the label, and an undone
# label is a newer row of the same key with ``retracted`` true (its ``label`` says what was taken
# back), never a deletion. ``latest_labels`` is redefined so that a key whose latest row is a
# retraction has no label at all: the ``cells`` view, the report, ``contam import labels`` and the
# judge's pending cells all read it, so they agree. Each rater's session is recorded with the seed
# that shuffled their cells, so their order is the same on every visit.
_LABELLING = """
ALTER TABLE labels ADD COLUMN note VARCHAR;
ALTER TABLE labels ADD COLUMN retracted BOOLEAN;
CREATE TABLE label_sessions (
    seq BIGINT DEFAULT nextval('row_seq'), session_id VARCHAR NOT NULL, rater VARCHAR NOT NULL,
    seed BIGINT NOT NULL, blind BOOLEAN, overlap DOUBLE, raters JSON, created_at TIMESTAMP);
CREATE OR REPLACE VIEW latest_labels AS
    SELECT * EXCLUDE (rn, retracted) FROM (
        SELECT *, row_number() OVER (PARTITION BY item_id, model, rater ORDER BY seq DESC) AS rn
        FROM labels) WHERE rn = 1 AND NOT coalesce(retracted, false);
"""

# Every file `contam import` wrote from, so that a report can name it and its sha256 (what a reader
# needs to fetch the very same file again): one row per import that added or re-read a file.
_IMPORTS = """
CREATE TABLE imports (
    seq BIGINT DEFAULT nextval('row_seq'), kind VARCHAR NOT NULL, file VARCHAR NOT NULL,
    sha256 VARCHAR NOT NULL, bytes BIGINT, rows BIGINT, added BIGINT, created_at TIMESTAMP);
"""


# Any study (issue "any study"): `cells` gains the item's own extra columns (`fields`, the JSON
# object import keeps in items.extra) and one column per rule-based metric (1.0 / 0.0 / NULL).
# The earlier columns keep their order; the new ones come last.
_CELLS_FIELDS_AND_RULES = r"""
CREATE OR REPLACE VIEW cells AS
WITH pairs AS (
    SELECT item_id, model FROM latest_answers UNION SELECT item_id, model FROM latest_labels),
human AS (
    SELECT item_id, model, arg_min(label, CASE WHEN rater = 'human' THEN '' ELSE rater END) AS label
    FROM latest_labels WHERE rater = 'human' OR rater LIKE 'human:%' GROUP BY ALL),
judge AS (
    SELECT item_id, model, arg_min(label, rater) AS label
    FROM latest_labels WHERE rater LIKE 'judge:%' GROUP BY ALL),
surface AS (
    SELECT item_id, model,
           max(value) FILTER (WHERE metric = 'bleu2') AS bleu2,
           max(value) FILTER (WHERE metric = 'bertscore_f1') AS bertscore_f1,
           max(value) FILTER (WHERE metric = 'exact') AS exact,
           max(value) FILTER (WHERE metric = 'contains') AS contains,
           max(value) FILTER (WHERE metric = 'numeric') AS numeric,
           max(value) FILTER (WHERE metric = 'regex') AS regex
    FROM latest_scores GROUP BY ALL)
SELECT p.item_id, i.title, i.subset, i.question, i.reference, p.model,
       a.answer, a.answer_raw, h.label AS human_label, j.label AS judge_label,
       s.bleu2, s.bertscore_f1,
       CASE WHEN a.answer IS NULL THEN NULL ELSE len(string_split_regex(trim(a.answer), '\s+'))
            * (trim(a.answer) <> '')::INT END AS answer_words,
       coalesce(regexp_matches(a.answer, '(?i)\b(i\s+(do\s+not|don''?t|cannot|can''?t)\s+(know|recall|remember|say|be\s+sure|answer)|i''?m\s+not\s+(sure|familiar|aware|certain)|i\s+am\s+not\s+(sure|familiar|aware|certain)|i\s+have\s+no\s+(information|knowledge|idea)|i\s+(don''?t|do\s+not)\s+have\s+(information|enough\s+information|any\s+information|knowledge|details)|not\s+familiar\s+with|unable\s+to\s+(answer|provide|recall|determine)|no\s+(reliable\s+)?information\s+(about|on))'), false) AS abstained,
       coalesce(trim(i.reference), '') = '' AS reference_empty,
       i.extra AS fields, s.exact, s.contains, s.numeric, s.regex
FROM pairs p
LEFT JOIN latest_items i USING (item_id)
LEFT JOIN latest_answers a USING (item_id, model)
LEFT JOIN human h USING (item_id, model)
LEFT JOIN judge j USING (item_id, model)
LEFT JOIN surface s USING (item_id, model);
"""

# The metric registry (issue "one declaration per concept"): `cell_base` is `cells` without its
# metric columns; `cells` itself is built from contam.metrics.metric_registry whenever a store opens
# (contam.harness.store.views), one column per registered metric after these.
_CELL_BASE = r"""
CREATE OR REPLACE VIEW cell_base AS
WITH pairs AS (
    SELECT item_id, model FROM latest_answers UNION SELECT item_id, model FROM latest_labels),
human AS (
    SELECT item_id, model, arg_min(label, CASE WHEN rater = 'human' THEN '' ELSE rater END) AS label
    FROM latest_labels WHERE rater = 'human' OR rater LIKE 'human:%' GROUP BY ALL),
judge AS (
    SELECT item_id, model, arg_min(label, rater) AS label
    FROM latest_labels WHERE rater LIKE 'judge:%' GROUP BY ALL)
SELECT p.item_id, i.title, i.subset, i.question, i.reference, p.model,
       a.answer, a.answer_raw, h.label AS human_label, j.label AS judge_label,
       CASE WHEN a.answer IS NULL THEN NULL ELSE len(string_split_regex(trim(a.answer), '\s+'))
            * (trim(a.answer) <> '')::INT END AS answer_words,
       coalesce(regexp_matches(a.answer, '(?i)\b(i\s+(do\s+not|don''?t|cannot|can''?t)\s+(know|recall|remember|say|be\s+sure|answer)|i''?m\s+not\s+(sure|familiar|aware|certain)|i\s+am\s+not\s+(sure|familiar|aware|certain)|i\s+have\s+no\s+(information|knowledge|idea)|i\s+(don''?t|do\s+not)\s+have\s+(information|enough\s+information|any\s+information|knowledge|details)|not\s+familiar\s+with|unable\s+to\s+(answer|provide|recall|determine)|no\s+(reliable\s+)?information\s+(about|on))'), false) AS abstained,
       coalesce(trim(i.reference), '') = '' AS reference_empty,
       i.extra AS fields
FROM pairs p
LEFT JOIN latest_items i USING (item_id)
LEFT JOIN latest_answers a USING (item_id, model)
LEFT JOIN human h USING (item_id, model)
LEFT JOIN judge j USING (item_id, model);
"""

# What `contam plant` fine-tuned: one row per planted model (ARCHITECTURE.md, The store).
_PLANTINGS = """
CREATE TABLE plantings (
    seq BIGINT DEFAULT nextval('row_seq'), name VARCHAR NOT NULL, base_name VARCHAR,
    base_model VARCHAR, planted_items JSON, format VARCHAR, share DOUBLE, epochs INTEGER,
    learning_rate DOUBLE, batch_size INTEGER, max_length INTEGER, seed INTEGER, device VARCHAR,
    loss_per_epoch JSON, weights_sha256 VARCHAR, versions JSON, wall_s DOUBLE,
    created_at TIMESTAMP);
"""

# Numbered and append-only themselves: a schema change is a new entry, never an edit of an old one.
MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "initial tables", _TABLES),
    (2, "latest views and cells", _VIEWS),
    (3, "batch jobs", _BATCHES),
    (4, "attempts.replica: the server of a replicated model",
     "ALTER TABLE attempts ADD COLUMN replica VARCHAR;"),
    (5, "labelling: notes, retractions, rater sessions", _LABELLING),
    (6, "contamination probes", _PROBES),
    (7, "imports: every imported file's name and sha256", _IMPORTS),
    (8, "cells: item fields and the rule-based metrics", _CELLS_FIELDS_AND_RULES),
    (9, "plantings: models fine-tuned on known items", _PLANTINGS),
    (10, "cell_base: cells without the registry's metric columns", _CELL_BASE),
]

TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "items": ("item_id", "title", "subset", "question", "reference", "extra", "source_file", "added_at"),
    "runs": ("run_id", "kind", "started_at", "finished_at", "config", "prompt_sha256", "harness_version"),
    "attempts": ("run_id", "item_id", "model", "attempt", "started_at", "latency_s", "outcome",
                 "http_status", "retry_after_s", "error", "replica", "variant", "samples"),
    "answers": ("run_id", "item_id", "model", "provider", "provider_model", "served_model",
                "answer_raw", "answer", "finish_reason", "input_tokens", "output_tokens",
                "latency_s", "created_at"),
    "labels": ("item_id", "model", "rater", "label", "rubric_sha256", "run_id", "source_file",
               "created_at", "note", "retracted"),
    "label_sessions": ("session_id", "rater", "seed", "blind", "overlap", "raters", "created_at"),
    "scores": ("item_id", "model", "metric", "value", "params", "created_at"),
    "batches": ("batch_key", "run_id", "model", "provider", "provider_model", "job_id", "status",
                "cells", "succeeded", "failed", "error", "created_at", "finished_at", "updated_at",
                "purpose"),
    "batch_cells": ("batch_key", "line", "item_id", "model", "variant", "samples"),
    "probe_params": ("params_sha256", "probe", "params", "created_at"),
    "probe_samples": ("run_id", "probe", "params_sha256", "item_id", "model", "variant", "sample",
                      "provider", "provider_model", "served_model", "prompt_sha256", "text_raw",
                      "text", "finish_reason", "input_tokens", "output_tokens", "latency_s",
                      "detail", "created_at"),
    "probe_scores": ("run_id", "probe", "params_sha256", "item_id", "model", "metric", "value",
                     "detail", "created_at"),
    "imports": ("kind", "file", "sha256", "bytes", "rows", "added", "created_at"),
    "plantings": ("name", "base_name", "base_model", "planted_items", "format", "share", "epochs",
                  "learning_rate", "batch_size", "max_length", "seed", "device", "loss_per_epoch",
                  "weights_sha256", "versions", "wall_s", "created_at"),
}
