"""`contam demo`: the bundled items, the config it writes, and (slow) the whole run end to end."""

from __future__ import annotations

import re

import duckdb
import pytest

from contam.harness.config import load_config
from contam.harness.jobs.demo import (
    DEMO_MAX_NEW_TOKENS, DEMO_MODEL_LABEL, demo_items_path, write_demo_config,
)
from contam.harness.jobs.importing import import_file
from contam.harness.store import Store
from contam.providers.local import DEFAULT_LOCAL_MODEL

TITLES = {"Pokémon Red": "official", "Pokémon Crystal": "official",
          "Pokémon Brown": "fan", "Pokémon Prism": "fan"}


def test_the_bundled_items_pass_the_strict_importer_with_a_source_for_each(store_path):
    with Store(store_path, create=True) as store:
        result = import_file(store, "items", demo_items_path())
        rows = store.query_dicts("SELECT item_id, title, subset, question, reference, "
                                 "json_extract_string(extra, '$.source') AS source FROM latest_items")
    assert result.added == result.read == len(rows)
    assert 16 <= len(rows) <= 20  # a few minutes on two cores
    assert {r["title"]: r["subset"] for r in rows} == TITLES
    for title in TITLES:
        assert 4 <= sum(r["title"] == title for r in rows) <= 6
    for r in rows:
        prefix = r["title"].split()[-1].lower()
        assert re.fullmatch(rf"{prefix}-\d\d", r["item_id"]), r["item_id"]
        assert r["question"].endswith("?") and r["reference"].strip() and r["source"].strip()


def test_the_seed_papers_quoted_items_are_among_them(store_path):
    with Store(store_path, create=True) as store:
        import_file(store, "items", demo_items_path())
        pairs = set(store.query("SELECT question, reference FROM latest_items"))
    assert ("Which named tunnel must the player traverse from eastern Mt. Boulder?",
            "Rijon Tunnel") in pairs
    assert ("Which Badge does Brock award after his defeat?", "Boulder Badge") in pairs
    references = {reference for _, reference in pairs}
    assert "TM34 (Bide)" in references
    assert "Professor Tim meets the player and takes them to his laboratory." in references


def test_the_demo_config_is_a_valid_run_config_for_the_local_model(tmp_path):
    config = load_config(write_demo_config(tmp_path))
    (spec,) = config.models
    assert (spec.name, spec.provider, spec.model) == (DEMO_MODEL_LABEL, "local", DEFAULT_LOCAL_MODEL)
    assert spec.concurrency == 6 and spec.params == {"max_new_tokens": DEMO_MAX_NEW_TOKENS}
    assert config.items == demo_items_path()
    assert config.store == (tmp_path / "contam.duckdb").resolve()


def test_an_out_path_that_is_a_file_is_a_one_line_error(tmp_path, contam):
    blocker = tmp_path / "taken"
    blocker.write_text("not a folder")
    status, _, err = contam("demo", "--out", blocker, "--no-progress")
    assert status == 2
    assert err.strip().startswith("contam demo:") and str(blocker) in err and "\n" not in err.strip()


# -- the whole thing, offline, with the real model and encoder: slow ---------------------------

def _counts(store_file) -> dict[str, int]:
    con = duckdb.connect(str(store_file), read_only=True)
    try:
        return {table: con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("items", "answers", "scores", "attempts")}
    finally:
        con.close()


@pytest.mark.slow
def test_contam_demo_runs_end_to_end_and_resumes(tmp_path, contam):
    out = tmp_path / "demo"
    status, stdout, err = contam("demo", "--out", out, "--no-progress")
    assert status == 0, err
    store_file = out / "contam.duckdb"
    con = duckdb.connect(str(store_file), read_only=True)
    items = con.execute("SELECT count(*) FROM latest_items").fetchone()[0]
    cells = con.execute("SELECT item_id, answer, served_model, finish_reason, bleu2, bertscore_f1 "
                        "FROM cells JOIN latest_answers USING (item_id, model, answer)").fetchall()
    bert_params = con.execute("SELECT any_value(params) FROM latest_scores "
                              "WHERE metric = 'bertscore_f1'").fetchone()[0]
    con.close()
    assert len(cells) == items == 18
    for item_id, answer, served, finish, bleu, bert in cells:
        assert answer and served == DEFAULT_LOCAL_MODEL and finish in ("stop", "length")
        assert bleu is not None and 0 <= bleu <= 1, item_id
        assert bert is not None, item_id
    assert '"model":"sentence-transformers/all-MiniLM-L6-v2"' in bert_params
    assert '"layer":5' in bert_params and '"baseline":"computed:shuffled-pairs' in bert_params
    for name in ("report.json", "report.md", "report.html", "demo.toml",
                 *(f"fig{n}.{ext}" for n in ("1_leaderboard", "2_contamination_gap",
                                             "3_metric_disagreement") for ext in ("png", "pdf"))):
        assert (out / name).stat().st_size > 0, name
    assert (out / "tables").is_dir() and any((out / "tables").glob("*.tex"))
    assert f"tables   {out / 'tables'}/" in stdout
    assert stdout.count("contam sql --store") == 3

    before, written = _counts(store_file), (out / "report.json").stat().st_mtime_ns
    status, stdout, err = contam("demo", "--out", out, "--no-progress")
    assert status == 0, err
    assert _counts(store_file) == before  # nothing asked, scored or imported twice
    assert "nothing to ask" in stdout
    # nothing new: no scorer loaded to find nothing due, the same report not drawn again
    assert "nothing new since the last demo" in stdout and "scores:" not in stdout
    assert (out / "report.json").stat().st_mtime_ns == written
