"""`contam report`: files, formats, figures, and the paper's numbers as printed."""

from __future__ import annotations

import base64
import math
import re

import orjson
import pytest

from contam.harness.jobs.report import report_json
from contam.harness.report.model import Report
from contam.harness.report.plots import paper as figures
from contam.harness.report.analysis import build_report
from contam.harness.store import Store
from tests.test_analysis import ITEMS, judge_only_labels, make_store, small_store, surface_store

DOCUMENTED_KEYS = {"contrast", "human_rater", "judge_rater", "overall", "per_title", "gap", "judge",
                   "agreement", "rank_correlation", "metric_validity"}
EXTRA_KEYS = {"probes", "regimes", "mcnemar", "cmh", "logistic", "provenance", "inter_annotator", "abstention", "missing", "answer_length", "notes", "meta",
              "judge_gap", "surface_by_subset", "validation", "not_in_report"}
PNG, PDF = b"\x89PNG\r\n\x1a\n", b"%PDF-"
FIGURES = ("fig1_leaderboard", "fig2_contamination_gap", "fig3_metric_disagreement", "fig4_per_title")


def test_writes_every_file_with_valid_magic_bytes(paper_out):
    for name in FIGURES:
        assert (paper_out / f"{name}.png").read_bytes().startswith(PNG)
        pdf = (paper_out / f"{name}.pdf").read_bytes()
        assert pdf.startswith(PDF) and pdf.rstrip().endswith(b"%%EOF")
    report = orjson.loads((paper_out / "report.json").read_bytes())
    assert set(report) == DOCUMENTED_KEYS | EXTRA_KEYS


def test_markdown_prints_the_papers_numbers(paper_out):
    md = (paper_out / "report.md").read_text("utf-8")
    assert re.search(r"\| claude-opus-5 \| 95\.0% \(190/200\) \| 12\.0% \(24/200\) \| 83\.0 pp \| \[[\d., ]+\] "
                     r"\| 139\.3 \| 7\.5 × 10⁻⁷² \|", md)
    assert re.search(r"\| gemini-3\.5-flash-lite \| 93\.0% .*\| 79\.0 pp \|.*\| 81\.6 \| 7\.5 × 10⁻⁶⁴ \|", md)
    assert re.search(r"\| gpt-5\.6-sol \| 100\.0% .*\| 71\.0 pp \|.*\| ∞ \| 6\.0 × 10⁻⁶¹ \|", md)
    assert re.search(r"\| gemma-4-31b \| 60\.5% .*\| 48\.5 pp \|.*\| 11\.2 \| 6\.5 × 10⁻²⁵ \|", md)
    assert "| gpt-5.6-sol | 400 | 258 | 9 | 133 | 64.5% | [59.7, 69.0] | 65.6% |" in md
    assert "| gemma-4-31b | 400 | 145 | 11 | 244 | 36.2% | [31.7, 41.1] | 37.6% |" in md
    assert "| claude-opus-5 | 97.0% [91.5, 99.0] | 93.0% [86.3, 96.6] | 8.0% [4.1, 15.0] | 16.0% [10.1, 24.4] |" in md
    assert "Cohen's κ = 0.750; linearly weighted κ = 0.820; κ = 0.775" in md
    assert "| Spearman ρ with human | — | 0.949 | 0.949 | 0.949 | 0.632 | — |" in md
    assert "| Right | 655 | 112 | 64 |" in md
    for name in FIGURES:
        assert f"]({name}.png)" in md


def test_json_has_inf_odds_ratio_and_fractions(paper_out):
    report = orjson.loads((paper_out / "report.json").read_bytes())
    gpt = next(r for r in report["gap"] if r["model"] == "gpt-5.6-sol")
    assert gpt["odds_ratio"] == "inf"
    assert all(0 <= r["accuracy"] <= 1 and 0 <= r["ci_low"] <= r["ci_high"] <= 1 for r in report["overall"])


def test_html_is_self_contained_and_embeds_the_figures(paper_out):
    page = (paper_out / "report.html").read_text("utf-8")
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 4 and all(base64.b64decode(i).startswith(PNG) for i in images)
    assert not re.search(r'(src|href)="(https?:|//)', page)
    assert "7.5 × 10⁻⁷²" in page and "<table>" in page and "$body" not in page


def test_format_json_to_stdout(contam, paper_path, tmp_path):
    status, out, err = contam("report", "--store", paper_path, "--format", "json")
    assert status == 0 and err == ""
    report = orjson.loads(out)
    assert set(report) == DOCUMENTED_KEYS | EXTRA_KEYS
    assert round(report["agreement"]["pooled"]["kappa"], 3) == 0.750
    assert not (paper_path.parent / "paper_report").exists()  # printing writes nothing


def test_format_md_and_html_to_stdout(contam, paper_path):
    status, md, _ = contam("report", "--store", paper_path, "--format", "md", "--contrast", "official,fan")
    assert status == 0 and "| claude-opus-5 | 95.0% (190/200)" in md and ".png)" not in md
    status, page, _ = contam("report", "--store", paper_path, "--format", "html")
    assert status == 0 and page.count("data:image/png;base64,") == 4


def test_default_folder_is_beside_the_store(contam, tmp_path):
    path = tmp_path / "study.duckdb"
    small_store(path).close()
    status, out, _ = contam("report", "--store", path, "--contrast", "canon,hack")
    assert status == 0 and "study_report" in out
    assert (tmp_path / "study_report" / "report.json").exists()
    assert (tmp_path / "study_report" / "fig3_metric_disagreement.pdf").read_bytes().startswith(PDF)


def test_no_judge_store_reports_and_draws_with_notes(contam, tmp_path):
    path = tmp_path / "s.duckdb"
    small_store(path).close()
    status, out, _ = contam("report", "--store", path, "--contrast", "canon,hack", "--format", "json")
    report = orjson.loads(out)
    assert status == 0 and set(report) == DOCUMENTED_KEYS | EXTRA_KEYS
    assert report["judge"] is None and report["agreement"] is None
    status, md, _ = contam("report", "--store", path, "--contrast", "canon,hack", "--format", "md")
    assert "## LLM judge" not in md and "no judge labels in the store" in md
    with Store(path, read_only=True) as store:
        fig = figures.metric_disagreement(build_report(store, contrast=("canon", "hack")))
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles == ["(a) Human: strict accuracy (%)", "(b) BLEU-2: mean score"]  # empty regimes left out
    assert len(fig.axes) == 2 and fig.get_figwidth() == pytest.approx(figures.FULL)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["m1", "m2", "m3"]  # human order
    figures.close(fig)


def test_figure_order_follows_the_paper(paper_path):
    with Store(paper_path, read_only=True) as store:
        report = build_report(store)
    fig = figures.contamination_gap(report)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["claude-opus-5", "gemini-3.5-flash-lite", "gpt-5.6-sol", "gemma-4-31b"]  # by gap
    figures.close(fig)
    fig = figures.leaderboard(report)
    assert fig.axes[0].get_yticklabels()[0].get_text().startswith("gpt-5.6-sol")  # best first
    assert fig.axes[0].patches[0].get_width() == pytest.approx(64.5)
    figures.close(fig)


def test_report_json_writes_nan_as_null_and_keeps_inf_string():
    data = orjson.loads(report_json(Report(cmh={"a": math.nan, "b": "inf", "c": 0.5})))
    assert data["cmh"] == {"a": None, "b": "inf", "c": 0.5}


@pytest.mark.parametrize("setup,args,message", [
    ("missing", [], "no such store"),
    ("empty", [], "no items"),
    ("small", ["--contrast", "official,fan"], "subset 'official' has no items"),
    ("small", ["--contrast", "canon"], "expected two different subsets"),
    ("small", ["--contrast", "canon,hack", "--judge", "judge:x"], "no such rater"),
])
def test_user_errors_are_one_line(contam, tmp_path, setup, args, message):
    path = tmp_path / "s.duckdb"
    if setup == "empty":
        Store(path, create=True).close()
    elif setup == "small":
        small_store(path).close()
    status, out, err = contam("report", "--store", path, *args)
    assert status == 2 and out == ""
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_report_from_imported_csv_files(contam, tmp_path):
    """The same paper data through `contam import` (labels spelled as the paper's sheet had them)."""
    import csv

    from tests.paper_data import build_paper_rows

    rows = build_paper_rows()
    spelled = {"right": "Right", "partial": "Partially right", "wrong": "Wrong"}
    files = {
        "items": [{k: r[k] for k in ("item_id", "title", "subset", "question", "reference")} for r in rows["items"]],
        "answers": [{k: r[k] for k in ("item_id", "model", "answer")} for r in rows["answers"]],
        "labels": [{**{k: r[k] for k in ("item_id", "model", "rater")}, "label": spelled[r["label"]]}
                   for r in rows["labels"]],
    }
    store = tmp_path / "imported.duckdb"
    for kind, records in files.items():
        path = tmp_path / f"{kind}.csv"
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(records[0]))
            writer.writeheader()
            writer.writerows(records)
        assert contam("import", kind, path, "--store", store)[0] == 0
    status, out, _ = contam("report", "--store", store, "--format", "json")
    report = orjson.loads(out)
    assert status == 0
    assert [(r["model"], r["right"], r["partial"], r["n"]) for r in report["overall"]] == [
        ("gpt-5.6-sol", 258, 9, 400), ("claude-opus-5", 214, 6, 400),
        ("gemini-3.5-flash-lite", 214, 6, 400), ("gemma-4-31b", 145, 11, 400)]
    assert report["agreement"]["pooled"]["confusion"] == [[655, 112, 64], [2, 12, 18], [3, 23, 709]]  # + 2 imputed
    assert next(r for r in report["missing"] if r["model"] == "gemma-4-31b")["empty"] == 2
    assert report["metric_validity"] is None  # no scores were imported: omitted, with notes
    assert {"metric_validity.bleu2", "metric_validity.bertscore_f1"} <= {n["section"] for n in report["notes"]}


# -- a store without human labels (the demo's case) ------------------------------------------------

def test_paper_report_keeps_its_figures_and_adds_surface_by_subset(paper_out):
    md = (paper_out / "report.md").read_text("utf-8")
    assert "No human labels" not in md and "under the LLM judge" not in md
    assert "## Surface metrics by subset" in md
    assert md.index("## The contamination gap") < md.index("## Surface metrics by subset")
    assert "](fig1_leaderboard.png)" in md.split("## Per-title accuracy")[0]  # still under Overall
    report = orjson.loads((paper_out / "report.json").read_bytes())
    validity = {r["model"]: r for r in report["metric_validity"]["bertscore_f1"]["per_model"]}
    for row in report["surface_by_subset"]["bertscore_f1"]:  # every scored answer is labelled here
        assert row["ratio"] == pytest.approx(validity[row["model"]]["documented_ratio"])


def test_no_labels_report_says_so_and_shows_surface_metrics(contam, tmp_path):
    path = tmp_path / "s.duckdb"
    surface_store(path).close()
    status, md, _ = contam("report", "--store", path, "--contrast", "canon,hack", "--format", "md")
    assert status == 0
    top = md.split("## ")[0]
    assert "accuracy sections need human labels: `contam import labels FILE`; the judge: `contam judge CONFIG`" in top
    assert "## Overall accuracy" not in md and "## The contamination gap" not in md
    assert re.search(r"\| m1 \| 0\.500 \[0\.4\d\d, 0\.6\d\d\] \(n=3\) \| 0\.200 \[0\.1\d\d, 0\.3\d\d\] \(n=3\) "
                     r"\| 0\.300 \|", md)  # bootstrap limits stay inside the scores' range
    assert re.search(r"\| m1 \| 0\.200 .*\| 0\.300 \| .* \| — \|", md)  # BERTScore: no ratio
    assert "| m2 | Doc A | canon | 2 | 0.200 | 0.550 | 2.0 |" in md  # per title
    status, page, _ = contam("report", "--store", path, "--contrast", "canon,hack", "--format", "html")
    assert page.count("data:image/png;base64,") == 3 and "BCa bootstrap" in page  # no fig4 without labels


def test_no_labels_figures_show_surface_means_not_accuracy(store_path):
    with surface_store(store_path) as store:
        report = build_report(store, contrast=("canon", "hack"))
    fig = figures.leaderboard(report)
    bleu, bert = fig.axes
    assert fig.get_suptitle() == ""  # the caption says what it is
    assert "not accuracy (no labels)" in bleu.get_xlabel() and "not accuracy" in bert.get_xlabel()
    assert (bleu.get_title(loc="left"), bert.get_title(loc="left")) == ("BLEU-2: mean score", "BERTScore-F1: mean score")
    assert [t.get_text().split()[0] for t in bleu.get_yticklabels()] == ["m2", "m1"]  # by mean BERTScore
    assert [p.get_width() for p in bleu.patches] == pytest.approx([0.15, 0.35])
    figures.close(fig)
    fig = figures.contamination_gap(report)
    bleu, bert = fig.axes  # BLEU-2 first, as in figures 1 and 3
    assert "not accuracy" in bert.get_ylabel() and "not accuracy" in bleu.get_ylabel()
    assert [t.get_text() for t in bert.get_xticklabels()] == ["m2", "m1"]  # BERTScore difference 0.4 > 0.3
    assert [p.get_height() for p in bert.patches] == pytest.approx([0.6, 0.2, 0.2, -0.1])
    assert {t.get_text() for t in bert.texts} == {"ratio 3.00×", "Δ +0.300 (no ratio)"}
    assert {t.get_text() for t in bleu.texts} == {"ratio 2.00×", "ratio 2.50×"}
    figures.close(fig)


def test_judge_only_figures_show_judge_accuracy_and_say_so(contam, tmp_path):
    path = tmp_path / "j.duckdb"
    labels = judge_only_labels()
    make_store(path, ITEMS, [(i, m, "a") for i, m, _, _ in labels], labels).close()
    with Store(path, read_only=True) as store:
        report = build_report(store, contrast=("canon", "hack"))
    fig = figures.leaderboard(report)
    (ax,) = fig.axes
    assert " ".join(ax.get_xlabel().split()) == "strict accuracy (%), LLM judge, not human (judge:j)"
    assert [t.get_text().split()[0] for t in ax.get_yticklabels()] == ["m3", "m1", "m2"]  # best first
    assert [p.get_width() for p in ax.patches] == pytest.approx([100, 50, 50])
    figures.close(fig)
    fig = figures.contamination_gap(report)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["m1", "m2", "m3"]  # by judge gap
    assert ax.get_ylabel() == "strict accuracy (%), LLM judge, not human"
    figures.close(fig)
    status, md, _ = contam("report", "--store", path, "--contrast", "canon,hack", "--format", "md")
    top = md.split("## ")[0]
    assert "`contam import labels FILE`" in top and "contam judge" not in top  # the judge already ran
    assert md.index("## LLM judge") < md.index("## The contamination gap under the LLM judge")
