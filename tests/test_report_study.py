"""The report for a study of one's own: accuracy under each rule metric beside the human and
judge accuracy, the rule metrics in metric validity, `contam report --by COLUMN`, and a study
without subsets. Counts below are worked out by hand from the small store this file builds."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from contam.harness.report.statistics import named_tests as stats
from contam.harness.report.analysis import build_report
from contam.harness.report.inputs.contrast import NO_SUBSETS
from contam.harness.jobs.score import score_store
from contam.harness.store import Store, utc_now
from contam.harness.study import StudySettings

# item, subset, reference, fields
ITEMS = [("i1", "official", "42", {"tier": "low", "year": 2001}),
         ("i2", "fan", "Paris", {"tier": "low", "year": 2002}),
         ("i3", "official", "1,000", {"tier": "high", "year": 2001}),
         ("i4", "fan", "Pikachu", {"tier": "high"})]
# item, model, answer, human label, judge label
ANSWERS = [("i1", "A", "42", "right", "right"), ("i2", "A", "Paris", "right", "right"),
           ("i3", "A", "1000", "right", "wrong"), ("i4", "A", "", None, None),
           ("i1", "B", "41", "wrong", "wrong"), ("i2", "B", "The answer is Paris", "right", "right"),
           ("i3", "B", "about 2000", "wrong", "wrong"), ("i4", "B", "Raichu", "wrong", "right")]


def build_store(path, *, subsets: bool = True, labels: bool = True, rules: bool = True):
    with Store(path, create=True) as store:
        store.append("items", [{"item_id": i, "title": None, "subset": s if subsets else None,
                                "question": f"{i}?", "reference": r, "extra": json.dumps(f),
                                "added_at": utc_now()} for i, s, r, f in ITEMS])
        store.append("answers", [{"item_id": i, "model": m, "answer_raw": a, "answer": a,
                                  "created_at": utc_now()} for i, m, a, _, _ in ANSWERS])
        if labels:
            store.append("labels", [{"item_id": i, "model": m, "rater": rater, "label": label,
                                     "created_at": utc_now()} for i, m, _, h, j in ANSWERS
                                    for rater, label in (("human", h), ("judge:j", j)) if label])
        score_store(store, ["exact", "numeric", "bleu2"] if rules else ["bleu2"],
                    study=StudySettings())
    return path


def report_of(path, **options):
    with Store(path, read_only=True) as store:
        return build_report(store, **options)


def accuracy(right, n, not_scored=0):
    low, high = stats.wilson_interval(right, n)
    return {"n": n, "right": right, "accuracy": right / n, "ci_low": low, "ci_high": high,
            "not_scored": not_scored}


def test_rule_accuracy_counts_empty_as_wrong_and_leaves_unscorable_out(store_path):
    report = report_of(build_store(store_path))
    rows = {(r["model"], r["metric"]): {k: v for k, v in r.items() if k not in ("model", "metric")}
            for r in report.rule_accuracy}
    assert report.rule_metrics == ["exact", "numeric"]
    assert rows == {  # A's i4 is empty: wrong; "Paris" and "Pikachu" have no number: left out
        ("A", "exact"): accuracy(3, 4), ("A", "numeric"): accuracy(2, 3, not_scored=1),
        ("B", "exact"): accuracy(0, 4), ("B", "numeric"): accuracy(0, 2, not_scored=2)}


def test_metric_validity_covers_the_rule_metrics_with_agreement(store_path):
    validity = report_of(build_store(store_path)).metric_validity
    assert set(validity) == {"bleu2", "bertscore_f1", "exact", "numeric"}
    pooled = validity["exact"]["pooled"]
    # 7 labelled, scored cells: human right & exact 1: 3; right & 0: 1 (B i2); others 0: 3
    assert pooled["confusion"] == [[3, 1], [0, 3]] and pooled["n"] == 7
    assert pooled["agreement"] == pytest.approx(6 / 7) and pooled["kappa"] == pytest.approx(18 / 25)
    assert (pooled["sensitivity"], pooled["specificity"]) == (0.75, 1.0)
    assert pooled["roc_auc"] == pytest.approx((0.75 + 1.0) / 2)  # binary: balanced accuracy


def test_the_report_files_show_the_rule_metrics(store_path, tmp_path, contam):
    out = tmp_path / "out"
    status, _, err = contam("report", "--store", build_store(store_path), "--out", out)
    assert status == 0, err
    md = (out / "report.md").read_text()
    assert "## Accuracy by rule metric" in md
    assert "| Model | Human | LLM judge | Exact match | Numeric |" in md
    assert "| A | 75.0% [30.1, 95.4] (3/4) | 50.0% [15.0, 85.0] (2/4) | 75.0% [30.1, 95.4] (3/4) |" in md
    assert "Exact match as a classifier of the human 'right' label." in md
    assert "Accuracy by rule metric" in (out / "report.html").read_text()
    tidy = pd.read_csv(out / "tables" / "rule_accuracy.csv")
    assert tidy.loc[(tidy.model == "A") & (tidy.metric == "numeric"), "right"].item() == 2
    agreement = pd.read_csv(out / "tables" / "rule_agreement.csv")
    pooled_exact = agreement[(agreement.scope == "pooled") & (agreement.metric == "exact")]
    assert pooled_exact["kappa"].item() == pytest.approx(0.72)
    assert (out / "tables" / "validity_exact.tex").exists()


def test_by_a_field_breaks_accuracy_down_per_value(store_path):
    by = report_of(build_store(store_path), by="tier").by
    assert by["column"] == "tier" and by["regimes"] == ["human", "judge", "exact", "numeric"]
    rows = {(r["value"], r["model"], r["regime"]): r for r in by["rows"]}
    assert [v for v, _, _ in rows][::8] == ["low", "high"]  # first-occurrence order
    assert (rows["low", "A", "human"]["right"], rows["low", "A", "human"]["n"]) == (2, 2)
    assert (rows["high", "A", "human"]["right"], rows["high", "A", "human"]["n"]) == (1, 2)
    assert (rows["high", "B", "judge"]["right"], rows["high", "B", "judge"]["n"]) == (1, 2)
    assert rows["high", "A", "human"]["ci_low"] == stats.wilson_interval(1, 2)[0]
    assert rows["low", "B", "numeric"]["not_scored"] == 1 and rows["low", "A", "human"]["items"] == 2


def test_by_a_core_column_and_a_value_some_items_lack(store_path):
    path = build_store(store_path)
    by_subset = report_of(path, by="subset").by
    assert {r["value"] for r in by_subset["rows"]} == {"official", "fan"}
    year = {(r["value"], r["model"], r["regime"]): r for r in report_of(path, by="year").by["rows"]}
    assert year[None, "A", "human"]["n"] == 1 and year["2001", "A", "human"]["n"] == 2


def test_by_writes_md_html_and_a_tidy_csv(store_path, tmp_path, contam):
    out = tmp_path / "out"
    status, _, err = contam("report", "--store", build_store(store_path), "--out", out, "--by", "tier")
    assert status == 0, err
    assert "## Accuracy by tier" in (out / "report.md").read_text()
    assert "Accuracy by tier" in (out / "report.html").read_text()
    assert json.loads((out / "report.json").read_text())["by"]["column"] == "tier"
    tidy = pd.read_csv(out / "tables" / "accuracy_by_item_tier.csv")
    assert list(tidy.columns[:4]) == ["column", "value", "model", "regime"]
    low_a = tidy[(tidy.value == "low") & (tidy.model == "A") & (tidy.regime == "human")]
    assert low_a[["right", "n", "accuracy"]].values.tolist() == [[2, 2, 1.0]]
    index = pd.read_csv(out / "tables" / "index.csv")
    assert "accuracy_by_item_tier" in index["name"].tolist()


def test_by_an_unknown_column_is_one_line_naming_the_columns_and_the_closest(store_path, tmp_path,
                                                                             contam):
    out = tmp_path / "out"
    status, _, err = contam("report", "--store", build_store(store_path), "--out", out, "--by", "teir")
    assert status == 2 and len(err.strip().splitlines()) == 1
    assert "--by 'teir': no such item column (did you mean 'tier'?) (columns present: item_id, " \
           "title, subset, question, reference, tier, year)" in err
    assert not out.exists()


def test_a_study_without_subsets_reports_accuracy_and_agreement(store_path, tmp_path, contam):
    out = tmp_path / "out"
    status, _, err = contam("report", "--store", build_store(store_path, subsets=False), "--out", out)
    assert status == 0, err
    report = json.loads((out / "report.json").read_text())
    assert report["without_subsets"] == NO_SUBSETS
    assert report["overall"] and report["agreement"] and report["rule_accuracy"]
    assert report["gap"] is None and report["cmh"] is None and report["surface_by_subset"] is None
    assert {r["scope"] for r in report["mcnemar"]} == {"all"}
    assert {r["subset"] for r in report["abstention"]} == {"all"}
    md = (out / "report.md").read_text()
    assert md.count(NO_SUBSETS) == 1 and "Contrast: official" not in md
    assert "## The contamination gap" not in md and not (out / "fig2_contamination_gap.png").exists()
    assert not [n for n in report["notes"] if n["section"].startswith(("gap", "cmh", "surface_by"))]
    _every_table_has_rows(md)


def test_a_study_without_subsets_or_labels_still_reports(store_path, tmp_path, contam):
    out = tmp_path / "out"
    path = build_store(store_path, subsets=False, labels=False)
    status, _, err = contam("report", "--store", path, "--out", out, "--by", "tier")
    assert status == 0, err
    md = (out / "report.md").read_text()
    assert NO_SUBSETS in md and "## Accuracy by rule metric" in md and "## Accuracy by tier" in md
    _every_table_has_rows(md)


def _every_table_has_rows(md: str) -> None:
    """A Markdown table's header and rule line are followed by at least one body row."""
    lines = md.splitlines()
    for n, line in enumerate(lines):
        if line.startswith("|---"):
            assert n + 1 < len(lines) and lines[n + 1].startswith("|"), lines[n - 1]


def test_a_report_without_rule_scores_has_no_new_keys(store_path):
    report = report_of(build_store(store_path, rules=False))
    assert not {"rule_metrics", "rule_accuracy", "by", "without_subsets"} & set(report.to_json())
    assert set(report.metric_validity) == {"bleu2", "bertscore_f1"}
