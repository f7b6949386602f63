"""The rule-scored study (examples/capitals/) walked through as docs/tutorials/rule-scored-study.md
writes it, against the emulator with no keys: every command exits 0, the report is written, and
its rule accuracy is the share the store's own cells give."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from contam.harness.config import load_config
from tests.walkthroughkit import ROOT, Walkthrough, bash_block

TUTORIAL = ROOT / "docs" / "tutorials" / "rule-scored-study.md"
LINES = bash_block("## Run it", doc=TUTORIAL)
EXAMPLE = ROOT / "examples" / "capitals"


@pytest.fixture(scope="module")
def walked(tmp_path_factory) -> dict:
    """The walkthrough done once: the report as JSON, the SQL step's rows, the cells."""
    monkeypatch = pytest.MonkeyPatch()
    folder = tmp_path_factory.mktemp("capitals")
    walk = Walkthrough(folder, _contam_inprocess, monkeypatch)
    try:
        walk.follow(LINES)
        report = json.loads((folder / "runs" / "capitals-report" / "report.json").read_text())
        return {"report": report, "sql": walk.step("sql").out, "folder": folder,
                "cells": _cells(folder / "runs" / "capitals.duckdb")}
    finally:
        walk.close()
        monkeypatch.undo()


def _contam_inprocess(*args: str) -> tuple[int, str, str]:
    import contextlib
    import io

    from contam.harness.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in args])
    return status, out.getvalue(), err.getvalue()


def _cells(store: Path) -> pd.DataFrame:
    import duckdb

    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute("SELECT item_id, model, exact, contains, fields FROM cells").df()


def test_the_example_is_rules_alone_with_exposure_and_a_release_date() -> None:
    with (EXAMPLE / "items.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 30 and "title" not in rows[0] and "subset" not in rows[0]
    assert all(float(r["population_log10"]) > 0 and len(r["un_admitted"]) == 10 for r in rows)
    config = load_config(EXAMPLE / "study.toml")
    assert config.judge is None and config.study.subsets == () and config.study.rubric is None
    assert set(config.study.metrics) <= {"exact", "contains", "numeric", "regex"}
    assert (config.study.exposure, config.study.released) == ("population_log10", "un_admitted")


def test_the_walkthrough_scores_every_answer_with_both_rules(walked) -> None:
    cells = walked["cells"]
    assert len(cells) == 60 and cells["exact"].notna().all() and cells["contains"].notna().all()


def test_the_reports_rule_accuracy_is_the_stores_share_of_right_answers(walked) -> None:
    cells = walked["cells"]
    rows = {(r["model"], r["metric"]): r for r in walked["report"]["rule_accuracy"]}
    assert len(rows) == 4
    for (model, metric), row in rows.items():
        mine = cells[cells["model"] == model]
        assert (row["n"], row["right"]) == (len(mine), int((mine[metric] == 1.0).sum()))
    assert 0 < rows[("gpt-emu", "contains")]["right"] < 30  # known and unknown capitals both


def test_the_sql_step_prints_one_row_per_model(walked) -> None:
    lines = [line for line in walked["sql"].splitlines() if "-emu" in line]
    assert [line.split("│")[1].strip() for line in lines] == ["claude-emu", "gpt-emu"]


def test_the_reports_first_line_names_the_outcome(walked) -> None:
    markdown = (walked["folder"] / "runs" / "capitals-report" / "report.md").read_text()
    first = [line for line in markdown.splitlines() if line.strip()][1]  # after "# contam report"
    assert first.startswith("**correct = contains**")


def test_no_table_of_the_report_is_a_header_alone(walked) -> None:
    out = walked["folder"] / "runs" / "capitals-report"
    lines = (out / "report.md").read_text().splitlines()
    separators = [n for n, line in enumerate(lines) if re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line)]
    assert separators, "the report has tables"
    for n in separators:
        assert n + 1 < len(lines) and lines[n + 1].startswith("|"), lines[n - 1]
    html = (out / "report.html").read_text()
    for table in re.findall(r"<table.*?</table>", html, re.DOTALL):
        assert "<td" in table, table[:200]


def test_the_exposure_section_is_statsmodels_logit_on_the_contains_outcome(walked) -> None:
    cells, report = walked["cells"], walked["report"]
    exposure = cells["fields"].map(lambda f: float(json.loads(f)["population_log10"]))
    y = (cells["contains"] == 1.0).astype(float)
    for model in sorted(cells["model"].unique()):
        mine = cells["model"] == model
        fit = sm.Logit(y[mine].to_numpy(), sm.add_constant(exposure[mine].to_numpy())).fit(disp=0)
        row = next(r for r in report["exposure"]["per_model"] if r["model"] == model)
        assert row["odds_ratio"] == pytest.approx(np.exp(fit.params[1]), rel=1e-6)
        assert row["wald_p"] == pytest.approx(fit.pvalues[1], rel=1e-6)
    design = np.column_stack([np.ones(len(cells)), exposure,
                              (cells["model"] == sorted(cells["model"].unique())[1]).astype(float)])
    pooled = sm.Logit(y.to_numpy(), design).fit(
        disp=0, cov_type="cluster",
        cov_kwds={"groups": pd.factorize(cells["item_id"])[0], "use_correction": True})
    assert report["exposure"]["pooled"]["odds_ratio"] == pytest.approx(np.exp(pooled.params[1]),
                                                                       rel=1e-6)
    low, high = pooled.conf_int()[1]
    assert (report["exposure"]["pooled"]["ci_low"], report["exposure"]["pooled"]["ci_high"]) == \
        pytest.approx((np.exp(low), np.exp(high)), rel=1e-6)
    assert report["exposure"]["pooled"]["wald_p"] == pytest.approx(pooled.pvalues[1], rel=1e-6)
