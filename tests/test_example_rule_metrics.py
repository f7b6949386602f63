"""examples/rule-metrics.toml end to end against the loopback emulator: `contam run`, then
`contam score --config` with no --metric (the config's [scoring] metrics, tolerance and regex),
then `contam report --by era`, whose accuracy counts right answers by the config's
`[study] correct = "contains"` (recorded by the run)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from contam.harness.cli.handlers import emulator_settings_from_args
from contam.harness.cli.parser import build_parser
from contam.harness.emulator.server import run_emulator

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _example_config(folder: Path, emulator_url: str) -> Path:
    """The example as it is, pointed at this test's emulator port; its items path made absolute."""
    text = (EXAMPLES / "rule-metrics.toml").read_text(encoding="utf-8")
    text = text.replace("http://127.0.0.1:8765", emulator_url.rstrip("/"))
    text = text.replace('items = "rule-metrics-items.csv"',
                        f'items = "{(EXAMPLES / "rule-metrics-items.csv").as_posix()}"')
    path = folder / "rule-metrics.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_rule_metrics_example_runs_end_to_end(tmp_path, contam, monkeypatch):
    monkeypatch.setenv("CONTAM_EMULATOR_KEY", "emulated")
    store, out = tmp_path / "rule.duckdb", tmp_path / "report"
    items = str(EXAMPLES / "rule-metrics-items.csv")
    settings = emulator_settings_from_args(build_parser().parse_args(["emulator", "--items", items]))
    with run_emulator(settings) as emu:
        config = _example_config(tmp_path, emu.url)
        status, _, err = contam("run", config, "--store", store, "--no-progress")
        assert status == 0, err
    status, scored, err = contam("score", "--store", store, "--config", config, "--no-progress")
    assert status == 0, err
    assert [line.split(":")[0] for line in scored.splitlines()] == \
        ["exact", "contains", "numeric", "regex", "bleu2"]
    with duckdb.connect(str(store), read_only=True) as con:
        by_subset = dict(con.execute(
            "SELECT subset, avg(exact) FROM cells GROUP BY subset").fetchall())
        numeric_null = con.execute("SELECT count(*) FROM cells WHERE numeric IS NULL AND "
                                   "NOT regexp_matches(reference, '[0-9]')").fetchone()[0]
        params = dict(con.execute("SELECT DISTINCT metric, params FROM scores").fetchall())
    assert by_subset["official"] > by_subset["fan"]  # the emulator knows the documented world
    assert numeric_null == 2 * 10  # 10 items without a number, 2 models: not scorable
    assert json.loads(params["numeric"])["tolerance"] == 0.001
    assert json.loads(params["regex"])["regex"] == r"^\W*([^.(]+)"
    status, _, err = contam("report", "--store", store, "--out", out, "--by", "era")
    assert status == 0, err
    report = json.loads((out / "report.json").read_text())
    assert report["rule_metrics"] == ["exact", "contains", "numeric", "regex"]
    assert {r["value"] for r in report["by"]["rows"]} == {"1990s", "2000s", "2010s"}
    assert "## Accuracy by era" in (out / "report.md").read_text()
    assert (out / "tables" / "accuracy_by_item_era.csv").exists()
    assert report["outcome"] == "contains"  # [study] correct, as the run recorded it
    with duckdb.connect(str(store), read_only=True) as con:
        contains = dict(con.execute("SELECT model, count(*) FILTER (WHERE contains = 1.0) FROM cells "
                                    "GROUP BY model").fetchall())
    assert {r["model"]: r["right"] for r in report["overall"]} == contains
    assert "**correct = contains**" in (out / "report.md").read_text().split("## ")[0]
