"""The DuckDB store: schema, numbered migrations, append-only writes and the views.

Nothing is ever UPDATEd or DELETEd: a correction is a newer row (higher ``seq``) and the
``latest_*`` views pick it. One process writes; inside it :class:`BatchWriter` (see
``harness.engine.writer``) is the single task that calls :meth:`Store.append`.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from harness.errors import UserError, first_line
from harness.store import DEFAULT_STORE
from harness.store.journal import replay

if TYPE_CHECKING:  # the importers hand over DataFrames; opening a store needs no pandas
    import pandas as pd

__all__ = ["Store", "DEFAULT_STORE", "utc_now", "TABLE_COLUMNS", "insert_statement",
           "StoreInUse", "LOCK_WAIT_S"]

# How long a writer's open waits for a store another process has open (a `contam sql`, a view's
# request): such readers hold it for moments, a job for hours.
LOCK_WAIT_S = 3.0

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
# Frozen as literal SQL: `abstained` holds harness.text.ABSTENTION_PATTERN as it was when this
# migration shipped; a changed pattern is a new migration, so old and new stores cannot differ.
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
}


def insert_statement(table: str, rows: Sequence[Mapping[str, Any]]) -> tuple[str, list]:
    """``INSERT`` of rows (dicts keyed by column name): missing columns are NULL, unknown ones
    refused, and a column that is NULL in every row is left out (NULL is every column's default
    but ``seq``'s)."""
    known = TABLE_COLUMNS[table]
    unknown = set().union(*(row.keys() for row in rows)) - set(known)
    if unknown:
        raise ValueError(f"{table}: unknown columns {sorted(unknown)}")
    # Each column travels as one list parameter that DuckDB unnests, with no DataFrame in
    # between: ~1.2 ms a statement against ~3.5 ms through pandas for 25 answers. That fixed
    # cost is what bounds the single writer.
    columns, values = [], []
    for column in known:
        column_values = [row.get(column) for row in rows]
        if any(value is not None for value in column_values):
            columns.append(column)
            values.append(column_values)
    if not columns:  # rows with nothing but NULLs still count
        columns, values = [known[0]], [[None] * len(rows)]
    select = ", ".join(f"unnest(${n}) AS {c}" for n, c in enumerate(columns, start=1))
    return f"INSERT INTO {table} BY NAME SELECT {select}", values


def utc_now() -> dt.datetime:
    """Naive UTC, as DuckDB's TIMESTAMP stores it."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


class StoreInUse(UserError):
    """The store is open in another process (or, read-only, in this one for writing)."""

    def __init__(self, path: Path, pid: int | None, holder: str) -> None:
        self.path, self.pid, self.holder = path, pid, holder
        who = f"pid {pid} ({holder})" if pid is not None else holder
        super().__init__(f"{path}: locked by {who}; try again when it has finished")


class Store:
    """A connection to one store file. ``read_only`` stores never migrate and never write.

    A missing file is created only with ``create=True``, which only the commands that start a
    study pass (``import items``, ``run``, ``demo``, ``probe``, ``bench``): anywhere else a
    mistyped ``--store`` is ``PATH: no such store``, and leaves no file behind. A writer's open
    waits up to ``lock_wait_s`` (default :data:`LOCK_WAIT_S`) for a store that another process
    has open; a reader's does not wait (:mod:`harness.store.access` does)."""

    def __init__(self, path: str | Path = DEFAULT_STORE, *, read_only: bool = False,
                 create: bool = False, lock_wait_s: float | None = None) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.replayed = 0
        self._locked_down = False
        if not self.path.exists() and (read_only or not create):
            raise UserError(f"{self.path}: no such store")
        wait = (0.0 if read_only else LOCK_WAIT_S) if lock_wait_s is None else lock_wait_s
        self.con = self._connect(wait)
        if not read_only:
            self.migrate()
            self.replayed = replay(self)  # replies a killed run received but had not committed

    def _connect(self, wait_s: float) -> duckdb.DuckDBPyConnection:
        if not self.read_only:
            self._check_writable()
        deadline = time.monotonic() + wait_s
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=self.read_only)
            except duckdb.Error as exc:  # not a DuckDB file, locked by another process, ...
                in_use = _in_use(self.path, exc)
                if in_use is None:
                    raise UserError(f"{self.path}: cannot open store ({first_line(exc)})") from None
                if time.monotonic() >= deadline:
                    raise in_use from None
                time.sleep(0.1)

    def _check_writable(self) -> None:
        """A writer needs its folder (for the store, its WAL and the reply journal) and the file
        writable; found out here, before anything is sent or half-written."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=self.path.parent):
                pass
            if self.path.exists():
                self.path.open("r+b").close()
        except (FileExistsError, NotADirectoryError):  # mkdir met a file on the way
            raise UserError(f"{self.path}: cannot write the store there "
                            f"({self._file_in_the_way()} is a file, not a folder)") from None
        except OSError as exc:
            raise UserError(f"{self.path}: cannot write the store there "
                            f"({exc.strerror or type(exc).__name__})") from None

    def _file_in_the_way(self) -> Path:
        return next((p for p in self.path.parents if p.exists() and not p.is_dir()),
                    self.path.parent)

    # -- schema -------------------------------------------------------------------------------

    def migrate(self) -> list[int]:
        self.con.execute("CREATE TABLE IF NOT EXISTS _migrations "
                         "(version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMP)")
        done = {row[0] for row in self.con.execute("SELECT version FROM _migrations").fetchall()}
        applied = []
        for version, name, sql in MIGRATIONS:
            if version not in done:
                self._apply(version, name, sql)
                applied.append(version)
        return applied

    def _apply(self, version: int, name: str, sql: str) -> None:
        with self.transaction():
            self.con.execute(sql)
            self.con.execute("INSERT INTO _migrations VALUES (?, ?, ?)", [version, name, utc_now()])

    # -- writing ------------------------------------------------------------------------------

    def transaction(self) -> "_Transaction":
        return _Transaction(self.con)

    def append(self, table: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert rows (dicts keyed by column name) in one statement (:func:`insert_statement`)."""
        if rows:
            self.con.execute(*insert_statement(table, rows))
        return len(rows)

    def append_query(self, table: str, select_sql: str, **frames: pd.DataFrame) -> int:
        """``INSERT INTO table BY NAME <select_sql>`` with the given DataFrames registered by name."""
        for name, frame in frames.items():
            self.con.register(name, frame)
        try:
            before = self.count(table)
            self.con.execute(f"INSERT INTO {table} BY NAME {select_sql}")
            return self.count(table) - before
        finally:
            for name in frames:
                self.con.unregister(name)

    # -- reading ------------------------------------------------------------------------------

    def count(self, table: str) -> int:
        return self.con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]

    def query(self, sql: str, params: Iterable[Any] | Mapping[str, Any] | None = None) -> list[tuple]:
        """Rows as tuples; ``params`` are positional (``$1``) or, as a mapping, named (``$name``)."""
        return self.con.execute(sql, _parameters(params)).fetchall()

    def query_dicts(self, sql: str,
                    params: Iterable[Any] | Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        cursor = self.con.execute(sql, _parameters(params))
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]

    def query_df(self, sql: str,
                 params: Iterable[Any] | Mapping[str, Any] | None = None) -> "pd.DataFrame":
        return self.con.execute(sql, _parameters(params)).df()

    def checked_query(self, query: str) -> tuple[list[str], list[tuple]]:
        """`contam sql`'s query (:mod:`harness.store.readonly`): one read-only statement, with
        file and network access switched off and the configuration locked from then on."""
        from harness.store.readonly import LOCKDOWN, check_query

        if not self.read_only:
            raise RuntimeError("checked_query needs a read-only store")
        check_query(self.con, query)
        if not self._locked_down:
            for setting in LOCKDOWN:
                self.con.execute(setting)
            self._locked_down = True
        cursor = self.con.execute(query)
        if cursor.description is None:
            return [], []
        return [d[0] for d in cursor.description], cursor.fetchall()

    def item_ids(self) -> set[str]:
        return {row[0] for row in self.query("SELECT DISTINCT item_id FROM items")}

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")


def _in_use(path: Path, exc: duckdb.Error) -> StoreInUse | None:
    """A StoreInUse naming who holds the store (the discovery file's command where it names
    that process), if that is why DuckDB refused to open it."""
    from harness.store.discovery import find_holder

    message = str(exc)
    found = _LOCK_HOLDER.search(message)
    if found:
        pid, holder = int(found["pid"]), Path(found["program"]).name
    elif "different configuration than existing connections" in message:
        pid, holder = os.getpid(), "this process"
    else:
        return None
    known = find_holder(path)
    if known is not None and known.pid == pid:
        holder = f"contam {known.command}"
    return StoreInUse(path, pid, holder)


def _parameters(params: Iterable[Any] | Mapping[str, Any] | None) -> list | dict | None:
    if params is None or isinstance(params, Mapping):
        return dict(params) if params is not None else None
    return list(params)


class _Transaction:
    """BEGIN ... COMMIT, or ROLLBACK on any exception: a refused file writes nothing."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def __enter__(self) -> duckdb.DuckDBPyConnection:
        self.con.execute("BEGIN TRANSACTION")
        return self.con

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.con.execute("ROLLBACK" if exc_type else "COMMIT")
