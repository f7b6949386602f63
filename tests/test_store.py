"""The store: numbered migrations, append-only writes, views that prefer the newest row."""

from __future__ import annotations

import json
import re
from collections.abc import Container
from pathlib import Path

import duckdb
import pytest

from contam.harness.store import MIGRATIONS, Store, utc_now
from tests.test_analysis import ITEMS

ROOT = Path(__file__).resolve().parents[1]


def test_migrations_are_recorded_once(store_path):
    with Store(store_path, create=True) as store:
        versions = [row[0] for row in store.query("SELECT version FROM _migrations ORDER BY 1")]
        assert versions == [v for v, _, _ in MIGRATIONS]
    with Store(store_path) as store:
        assert store.migrate() == []
        assert store.count("_migrations") == len(MIGRATIONS)


def test_read_only_store_refuses_writes_and_missing_files(store_path):
    Store(store_path, create=True).close()
    with Store(store_path, read_only=True) as store:
        with pytest.raises(Exception):
            store.append("items", [{"item_id": "x"}])
    from contam.harness.errors import UserError
    with pytest.raises(UserError, match="no such store"):
        Store(store_path.parent / "missing.duckdb", read_only=True)


def test_append_refuses_unknown_columns(store_path):
    with Store(store_path, create=True) as store, \
            pytest.raises(ValueError, match="unknown columns"):
        store.append("answers", [{"item_id": "a", "model": "m", "api_key": "x"}])


def test_latest_views_pick_the_newest_row(store_path):
    with Store(store_path, create=True) as store:
        store.append("items", [{"item_id": "i", "title": "T", "subset": "fan", "question": "q",
                                "reference": "old"}])
        store.append("items", [{"item_id": "i", "title": "T", "subset": "fan", "question": "q",
                                "reference": "new"}])
        for text in ("first", "second"):
            store.append("answers", [{"item_id": "i", "model": "m", "answer_raw": text,
                                      "answer": text, "created_at": utc_now()}])
        for value in (0.1, 0.7):
            store.append("scores", [{"item_id": "i", "model": "m", "metric": "bleu2",
                                     "value": value, "params": "{}"}])
        cell = store.query_dicts("SELECT * FROM cells")
        assert len(cell) == 1
        assert (cell[0]["reference"], cell[0]["answer"], cell[0]["bleu2"]) == ("new", "second", 0.7)
        assert store.count("answers") == 2 and store.count("latest_answers") == 1


def test_cells_prefers_the_plain_human_rater(store_path):
    with Store(store_path, create=True) as store:
        labels = [("human:bob", "wrong"), ("human", "right"), ("judge:b", "partial"),
                  ("judge:a", "wrong")]
        store.append("labels", [{"item_id": "i", "model": "m", "rater": r, "label": l}
                                for r, l in labels])
        row = store.query_dicts("SELECT human_label, judge_label FROM cells")[0]
        assert row == {"human_label": "right", "judge_label": "wrong"}


def test_abstentions_are_flagged(store_path):
    answers = {"a": "I don't know which tunnel that is.", "b": "I'm not familiar with Pokémon Prism.",
               "c": "Silk Tunnel.", "d": "The rival challenges you; I know that well."}
    with Store(store_path, create=True) as store:
        store.append("answers", [{"item_id": k, "model": "m", "answer": v} for k, v in answers.items()])
        flags = dict(store.query("SELECT item_id, abstained FROM cells"))
    assert flags == {"a": True, "b": True, "c": False, "d": False}


# A connection's own temporary table (``temp.NAME``, never the store's) may be dropped.
_MUTATION = re.compile(r"\b(UPDATE\s+\w+\s+SET|DELETE\s+FROM|TRUNCATE|DROP\s+TABLE(?!\s+temp\.)|"
                       r"INSERT\s+OR\s+REPLACE|ON\s+CONFLICT)\b", re.IGNORECASE)


def test_no_statement_updates_or_deletes_rows():
    sources = [p for d in ("harness", "providers", "metrics") for p in (ROOT / d).rglob("*.py")]
    assert len(sources) > 5
    offenders = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in sources
                 for m in _MUTATION.finditer(p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_migrations_are_literal_sql_and_agree_with_the_abstention_rule() -> None:
    """A migration is frozen text: no placeholder is left to fill in, and the `abstained` column of
    the cells view uses the pattern the Python side uses (a changed pattern is a new migration)."""
    from contam.harness.text import ABSTENTION_PATTERN

    views = dict((version, sql) for version, _, sql in MIGRATIONS)[2]
    assert "{" not in views  # no f-string leftovers
    assert f"regexp_matches(a.answer, '{ABSTENTION_PATTERN.replace(chr(39), chr(39) * 2)}')" in views


def old_store(path: Path, versions: Container[int]) -> Path:
    """A store as an older contam left it: only the given migrations applied."""
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE _migrations (version INTEGER PRIMARY KEY, name VARCHAR, "
                    "applied_at TIMESTAMP)")
        for version, name, sql in MIGRATIONS:
            if version in versions:
                con.execute(sql)
                con.execute("INSERT INTO _migrations VALUES (?, ?, ?)", [version, name, utc_now()])
    return path


def _studied_before_migration_5(path: Path) -> Path:
    """Items, answers and human labels, in a store with migrations 1-4 (the previous release's)."""
    old_store(path, range(1, 5))
    with duckdb.connect(str(path)) as con:
        for item_id, title, subset in ITEMS:
            con.execute("INSERT INTO items (item_id, title, subset, question, reference) "
                        "VALUES (?, ?, ?, 'q?', 'ref')", [item_id, title, subset])
            for model in ("m1", "m2"):
                con.execute("INSERT INTO answers (item_id, model, answer, answer_raw) "
                            "VALUES (?, ?, 'a', 'a')", [item_id, model])
                label = "right" if subset == "canon" or model == "m1" else "wrong"
                con.execute("INSERT INTO labels (item_id, model, rater, label) "
                            "VALUES (?, ?, 'human', ?)", [item_id, model, label])
    return path


@pytest.mark.parametrize("command", [
    ("report", "--format", "json", "--contrast", "canon,hack"),
    ("sql", "--format", "csv", "select count(*) AS n from probe_scores")])
def test_a_store_an_older_contam_made_is_migrated_and_then_read(contam, tmp_path, command):
    path = _studied_before_migration_5(tmp_path / "old.duckdb")
    status, out, err = contam(command[0], "--store", path, *command[1:])
    assert status == 0, err
    if command[0] == "sql":
        assert out.splitlines() == ["n", "0"]
    else:
        assert sorted(row["model"] for row in json.loads(out)["gap"]) == ["m1", "m2"]
    with Store(path, read_only=True) as store:
        versions = [row[0] for row in store.query("SELECT version FROM _migrations ORDER BY 1")]
        assert versions == [v for v, _, _ in MIGRATIONS] and store.count("answers") == 12


def test_an_older_store_that_cannot_be_migrated_is_one_line(contam, tmp_path, monkeypatch):
    from tests.test_store_host import hold

    monkeypatch.setattr("contam.harness.store.store.LOCK_WAIT_S", 0.2)
    path = _studied_before_migration_5(tmp_path / "old.duckdb")
    reader = hold(path, "read", 30)  # another DuckDB client reading it: no writer may open it
    try:
        status, out, err = contam("sql", "--store", path, "select count(*) from probe_scores")
    finally:
        reader.kill()
        reader.wait()
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"{path}: made by an older contam" in err and f"locked by pid {reader.pid} " in err
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT max(version) FROM _migrations").fetchone() == (4,)
