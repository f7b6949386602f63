"""The worked example examples/exposure/ end to end against the loopback emulator: `contam import
items`, `contam run`, labels (human for most cells, the judge's for the rest, written straight into
the store), then `contam report --config` with the Exposure, cut-off and tiers sections."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from contam.harness.config import load_config
from contam.harness.emulator.knowledge import Knowledge
from contam.harness.store import Store, utc_now

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "exposure"


def local_config(tmp_path: Path, emulator) -> Path:
    """The example's study.toml with its models pointed at this test's emulator."""
    text = (EXAMPLE / "study.toml").read_text(encoding="utf-8")
    text = text.replace("http://127.0.0.1:8765/v1", emulator.base_url("openai"))
    text = text.replace("http://127.0.0.1:8765", emulator.base_url("anthropic"))
    text = text.replace('items = "items.csv"', f'items = "{EXAMPLE / "items.csv"}"')
    path = tmp_path / "study.toml"
    path.write_text(text, encoding="utf-8")
    return path


def label_answers(store_path: Path) -> None:
    """Right where the answer names the reference's version; every third item by the judge."""
    with Store(store_path) as store:
        answers = store.query("SELECT a.item_id, a.model, a.answer, i.reference FROM latest_answers a "
                              "JOIN latest_items i USING (item_id)")
        store.append("labels", [
            {"item_id": item, "model": model, "label": "right" if reference in (answer or "") else "wrong",
             "rater": "judge:emu" if int(item[2:]) % 3 == 0 else "human", "created_at": utc_now()}
            for item, model, answer, reference in answers])


def test_the_example_config_is_valid():
    config = load_config(EXAMPLE / "study.toml")
    assert config.study.exposure == "pages_log10" and config.study.released == "released"
    assert config.study.subsets == ("official", "reference", "changelog")
    assert [m.cutoff.isoformat() for m in config.models] == ["2022-06-30", "2024-06-30"]
    with (EXAMPLE / "items.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 30 and {r["subset"] for r in rows} == set(config.study.subsets)


def test_the_exposure_example_runs_end_to_end(tmp_path, emulator, contam, monkeypatch):
    monkeypatch.setenv("CONTAM_EMULATOR_KEY", "anything")
    emu = emulator(knowledge=Knowledge.from_file(EXAMPLE / "items.csv"))
    config, store = local_config(tmp_path, emu), tmp_path / "exposure.duckdb"
    status, _, err = contam("import", "items", EXAMPLE / "items.csv", "--store", store)
    assert status == 0, err
    status, _, err = contam("run", config, "--store", store)
    assert status == 0, err
    label_answers(store)
    status, _, err = contam("report", "--store", store, "--out", tmp_path / "report", "--config", config,
                            "--contrast", "official,changelog")
    assert status == 0, err
    folder = tmp_path / "report"
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    for heading in ("## Exposure", "## Before and after the training cut-off", "## Accuracy across ordered tiers"):
        assert heading in markdown
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    counts = report["exposure"]["correct"]
    assert counts["human"] == 40 and counts["judge"] == 20  # 20 and 10 items × 2 models
    assert all(r["odds_ratio"] > 1 for r in report["exposure"]["per_model"])  # official items are known
    assert {r["model"]: r["cutoff"] for r in report["cutoff"]["per_model"]} == {
        "emu-2022": "2022-06-30", "emu-2024": "2024-06-30"}
    assert all(r["z"] < 0 for r in report["tiers"]["trend"])  # accuracy falls down the tiers
    assert (folder / "fig5_exposure.png").exists() and (folder / "fig5_exposure.pdf").exists()
    for table in ("exposure_by_model", "exposure_quintiles", "cutoff_by_model", "tiers_by_model", "tiers_trend"):
        assert (folder / "tables" / f"{table}.csv").exists() and (folder / "tables" / f"{table}.tex").exists()


@pytest.mark.parametrize("column", ["pages_log10", "released"])
def test_the_example_items_keep_their_study_columns(tmp_path, contam, column):
    status, _, err = contam("import", "items", EXAMPLE / "items.csv", "--store", tmp_path / "s.duckdb")
    assert status == 0, err
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        values = [json.loads(r[0])[column] for r in store.query("SELECT extra FROM latest_items")]
    assert len(values) == 30 and all(values)
