"""The report's min-k part: AUC and its seeded bootstrap interval, grouping by model, score and
k, unscored texts counted; the section, table and figure of `contam report`."""

from __future__ import annotations

import json
import math

import orjson
import pytest

from contam.harness.report.model import Report
from contam.harness.report.parts.probe_mink import RESAMPLES, SEED, auc_interval, build, section
from contam.harness.store import Store, utc_now
from contam.metrics.probe_mink import probe_params
from contam.metrics.probes import params_sha256

PNG = b"\x89PNG\r\n\x1a\n"


def _store(path, scores):
    """Items d0.. (official) and u0.. (fan); ``scores``: (model, metric, k, item, value)."""
    with Store(path, create=True) as store, store.transaction():
        items = sorted({s[3] for s in scores})
        store.append("items", [{"item_id": i, "title": "T", "subset": "official" if i[0] == "d"
                                else "fan", "question": f"Q {i}?", "reference": "R"} for i in items])
        for k in sorted({s[2] for s in scores}):
            params = probe_params(k, "forward")
            store.append("probe_params", [{"params_sha256": params_sha256("min-k", params),
                                           "probe": "min-k", "params": orjson.dumps(params).decode()}])
        store.append("probe_scores", [
            {"probe": "min-k", "params_sha256": params_sha256("min-k", probe_params(k, "forward")),
             "item_id": item, "model": model, "metric": metric, "value": value,
             "created_at": utc_now()} for model, metric, k, item, value in scores])
    return path


def test_auc_is_the_share_of_documented_undocumented_pairs_ranked_right(tmp_path):
    scores = [("m", "min_k", 0.2, f"d{i}", v) for i, v in enumerate([3.0, 4.0, 5.0])]
    scores += [("m", "min_k", 0.2, f"u{i}", v) for i, v in enumerate([1.0, 2.0, 3.0, None])]
    with Store(_store(tmp_path / "s.duckdb", scores), read_only=True) as store:
        part = build(store)
    [row] = part["rows"]
    assert row["auc"] == pytest.approx(8.5 / 9)  # the tie 3 vs 3 counts one half
    assert (row["documented_n"], row["undocumented_n"], row["unscored"]) == (3, 3, 1)
    assert (row["documented_median"], row["undocumented_median"]) == (4.0, 2.0)
    assert 0 <= row["auc_ci_low"] <= row["auc"] <= row["auc_ci_high"] <= 1
    assert (part["resamples"], part["seed"]) == (RESAMPLES, SEED) == (2000, 0)


def test_the_interval_is_seeded_and_undefined_without_two_scores_a_side():
    doc, undoc = [0.1, 0.5, 0.9, 1.3, 0.2, 0.7], [0.0, 0.4, 0.3, -0.2, 0.6, 0.1]
    first = auc_interval(doc, undoc)
    assert first == auc_interval(doc, undoc) and first[0] < first[1]
    assert all(math.isnan(x) for x in auc_interval([1.0], undoc))


def test_rows_are_per_model_score_and_k(tmp_path):
    scores = [(m, metric, k, item, float(n))
              for m in ("a", "b") for metric in ("min_k", "min_k_pp") for k in (0.2, 0.5)
              for n, item in enumerate(["d0", "d1", "u0", "u1"])]
    with Store(_store(tmp_path / "s.duckdb", scores), read_only=True) as store:
        rows = build(store)["rows"]
    assert [(r["model"], r["metric"], r["k"]) for r in rows] == [
        (m, metric, k) for m in ("a", "b") for metric in ("min_k", "min_k_pp") for k in (0.2, 0.5)]
    assert {r["auc"] for r in rows} == {0.0}  # the fan items scored higher: AUC 0, not flipped


def test_two_parameter_sets_of_the_same_k_count_each_item_once(tmp_path):
    """Another text rule at the same k and source is another parameter set: the part reports,
    per model, k and source, the set with the most scored items, names the other, and never
    pools the two (which counted every item twice)."""
    values = {"d0": 3.0, "d1": 4.0, "d2": 5.0, "u0": 1.0, "u1": 2.0, "u2": 3.5}
    path = _store(tmp_path / "s.duckdb", [("m", "min_k", 0.2, i, v) for i, v in values.items()])
    other = {**probe_params(0.2, "forward"), "text": "question only"}
    with Store(path) as store, store.transaction():
        store.append("probe_params", [{"params_sha256": params_sha256("min-k", other),
                                       "probe": "min-k", "params": orjson.dumps(other).decode()}])
        store.append("probe_scores", [
            {"probe": "min-k", "params_sha256": params_sha256("min-k", other), "item_id": item,
             "model": "m", "metric": "min_k", "value": -values[item], "created_at": utc_now()}
            for item in ("d0", "u0")])
    with Store(path, read_only=True) as store:
        part = build(store)
    [row] = part["rows"]
    assert (row["documented_n"], row["undocumented_n"]) == (3, 3)
    assert row["documented_values"] == [3.0, 4.0, 5.0] and row["auc"] == pytest.approx(8 / 9)
    assert row["params_sha256"] == params_sha256("min-k", probe_params(0.2, "forward"))
    assert part["other_params"] == [params_sha256("min-k", other)]
    paragraphs = section(part, Report(contrast={"documented": "official", "undocumented": "fan"})).paragraphs
    assert "also holds min-k scores under 1 other parameter set(s)" in " ".join(paragraphs)


def test_a_store_without_min_k_scores_has_no_part(tmp_path):
    with Store(tmp_path / "s.duckdb", create=True) as store:
        assert build(store) is None


def test_contam_report_writes_the_section_table_and_figure(tmp_path, contam):
    """The whole report of a store with min-k scores only (about 10 s: matplotlib draws every
    figure of the report once)."""
    scores = [("local-a", metric, 0.2, f"{s}{i}", (1.0 if s == "d" else 0.0) + i / 10)
              for metric in ("min_k", "min_k_pp") for s in "du" for i in range(5)]
    store = _store(tmp_path / "s.duckdb", scores)
    status, out, err = contam("report", "--store", store, "--out", tmp_path / "report")
    assert status == 0, err
    folder = tmp_path / "report"
    assert (folder / "fig_probe_min_k.png").read_bytes().startswith(PNG)
    assert (folder / "fig_probe_min_k.pdf").is_file()
    md = (folder / "report.md").read_text("utf-8")
    assert "## Probe: min-k (token log-probabilities)" in md
    assert "| local-a | Min-K% | 0.2 | 5 / 5 | 1.200 | 0.200 | 1.000 |" in md
    assert "| local-a | Min-K%++ | 0.2 | 5 / 5 |" in md and "![Probe min-k: Min-K%" in md
    assert "2000 resamples of each subset, seed 0" in md
    assert "seed 20240613 (the min-k probe's ROC-AUC: percentile, 2000 resamples of each subset, " \
           "seed 0)" in md  # the provenance's bootstrap settings are not min-k's
    report = json.loads((folder / "report.json").read_text("utf-8"))
    assert report["probes"]["min-k"]["rows"][0]["documented_values"] == [1.0, 1.1, 1.2, 1.3, 1.4]
    assert any("min_k" in p.name for p in (folder / "tables").iterdir())
    assert "fig_probe_min_k" in (folder / "report.html").read_text("utf-8")
