"""Jobs and the engine ask the store by name (harness/store/): no ``.con`` outside it. The named
reads that replaced raw SQL are checked here on a real DuckDB file; the import's staging, the
cells each job still has to do and the batch lane have their own tests (test_import*,
test_run, test_judge, test_score, test_probe*, test_batch)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from contam.harness.store import Store, utc_now
from contam.harness.store.batches import job_cells, known_job_ids, open_jobs
from contam.harness.store.probe_scores import probe_score_means
from contam.harness.store.staging import first_duplicate, first_unknown_item, stage

ROOT = Path(__file__).resolve().parent.parent


def test_no_module_outside_the_store_touches_its_connection() -> None:
    uses = [f"{path.relative_to(ROOT)}:{n}" for pkg in ("harness", "providers", "metrics")
            for path in (ROOT / pkg).rglob("*.py") if (ROOT / "harness/store") not in path.parents
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
            if re.search(r"\.con\b", line)]
    assert uses == []


@pytest.fixture
def store(tmp_path: Path):
    with Store(tmp_path / "s.duckdb", create=True) as opened:
        yield opened


def _batch(key: str, status: str, *, job_id: str | None = None, purpose: str | None = None,
           model: str = "m") -> dict:
    return {"batch_key": key, "model": model, "status": status, "job_id": job_id, "purpose": purpose,
            "created_at": utc_now()}


def test_open_jobs_are_the_latest_row_of_each_job_not_closed_of_that_model_and_purpose(store) -> None:
    store.append("batches", [_batch("k1", "submitting"), _batch("k2", "in_progress", job_id="j2"),
                             _batch("k3", "in_progress", job_id="j3", purpose="probe:cdd"),
                             _batch("k4", "in_progress", job_id="j4", model="other")])
    store.append("batches", [_batch("k2", "imported", job_id="j2"), _batch("k5", "abandoned")])
    assert [row[:3] for row in open_jobs(store, "m", None)] == [("k1", None, "submitting")]
    assert [row[0] for row in open_jobs(store, "m", "probe:cdd")] == ["k3"]
    assert known_job_ids(store) == {"j2", "j3", "j4"}


def test_a_jobs_cells_come_back_in_line_order(store) -> None:
    store.append("batch_cells", [{"batch_key": "k", "line": n, "item_id": f"i{n}", "model": "m",
                                  "variant": "v" if n == 2 else None, "samples": [0, 1] if n == 2 else None}
                                 for n in (2, 0, 1)])
    store.append("batch_cells", [{"batch_key": "other", "line": 0, "item_id": "x", "model": "m"}])
    assert job_cells(store, "k") == [(0, "i0", None, None), (1, "i1", None, None), (2, "i2", "v", [0, 1])]


def test_probe_score_means_average_per_model_and_subset_over_values(store) -> None:
    store.append("items", [{"item_id": i, "subset": s, "question": "q", "reference": "r"}
                           for i, s in (("a", "official"), ("b", "official"), ("c", "fan"))])
    rows = [("a", "m", 1.0), ("b", "m", 0.0), ("c", "m", None), ("a", "n", 0.5), ("a", "z", 9.0)]
    store.append("probe_scores", [{"probe": "cdd", "params_sha256": "h", "item_id": i, "model": m,
                                   "metric": "flagged", "value": v} for i, m, v in rows])
    assert probe_score_means(store, ["m", "n"]) == [("cdd", "flagged", "m", "official", 0.5, 2),
                                                    ("cdd", "flagged", "n", "official", 0.5, 1)]


def test_staging_finds_the_first_duplicate_key_and_the_first_unknown_item(store) -> None:
    store.append("items", [{"item_id": "a", "question": "q", "reference": "r"}])
    now = utc_now()
    rows = [{"item_id": item, "model": "m", "rater": "human", "label": "right", "rubric_sha256": None,
             "source_file": "f.csv", "created_at": now, "_line": line}
            for line, item in ((2, "a"), (3, "zz"), (4, "a"))]
    with store.transaction():
        assert stage(store, "labels", iter(rows)) == 3
        assert first_duplicate(store, ("item_id", "model", "rater")) == (4, 2, "a", "m", "human")
        assert first_unknown_item(store) == (3, "zz")
