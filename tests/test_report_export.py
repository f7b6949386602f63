"""What a paper takes from the report: tables/ as CSV and booktabs LaTeX, print-ready figures,
corrected p-values and bounded intervals in the paper data's report, and escaping of every value
a user or a model supplied (md, html, LaTeX, figure labels)."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import orjson
import pandas as pd
import pytest
from markdown_it import MarkdownIt
from PIL import Image

from contam.harness.report.plots import paper as figures
from contam.harness.report.analysis import build_report
from contam.harness.report.model import Report
from contam.harness.report.texts.format import md_cell
from contam.harness.report.texts.markdown import note_heading
from contam.harness.report.writers.tables import latex_text
from tests.missing import skip_or_fail
from tests.test_analysis import ITEMS, make_store, small_store

HOSTILE = "$x^2$ <script>alert(1)</script> | `tick` & [a](javascript:b) 100%_#{}~\\"


# -- the paper data's report --------------------------------------------------------------------

def bounded_intervals(report):
    """Every (key, low, high) of an accuracy or a score mean: the ones that must lie in [0, 1]."""
    skip = {"cmh", "logistic", "provenance"}  # odds ratios, on their own scale
    found = []

    def walk(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                if key.endswith("ci_low") and not key.startswith(("gap", "difference")):
                    found.append((path + key, value, node[key.replace("low", "high")]))
                if key not in skip:
                    walk(value, path + key + ".")
        elif isinstance(node, list):
            for item in node:
                walk(item, path)
    walk(report, "")
    return found


def test_paper_report_intervals_stay_in_range_and_tests_are_corrected(paper_out):
    report = orjson.loads((paper_out / "report.json").read_bytes())
    intervals = bounded_intervals(report)
    assert len(intervals) > 60 and any("bleu2_ci_low" in k for k, _, _ in intervals)
    assert all(0 <= low <= high <= 1 for _, low, high in intervals if low is not None)
    assert all(r["p"] <= r["p_holm"] <= 1 for r in report["mcnemar"])
    assert report["mcnemar"][0]["holm_family"].startswith("exact McNemar") and "18 tests" in \
        report["mcnemar"][0]["holm_family"]
    assert all(r["fisher_p"] <= r["fisher_p_holm"] for r in report["gap"])
    md = (paper_out / "report.md").read_text("utf-8")
    assert "| Identical labels | p | Holm p |" in md and "18 tests: 6 pairs × 3 scopes" in md
    assert re.search(r"Mantel–Haenszel odds ratio 45\.5, 95% CI \[32\.3, 64\.3\] \(Robins–Breslow–Greenland "
                     r"variance\); Cochran–Mantel–Haenszel χ² = 825\.4 \(1 df, no continuity correction\), "
                     r"p = 1\.6 × 10⁻¹⁸¹", md)
    assert re.search(r"Breslow–Day test of equal odds ratios with Tarone's correction: χ² = 51\.6 \(3 df\), "
                     r"p = 3\.6 × 10⁻¹¹; yes", md)
    assert "**Logistic model** right ~ subset + model on 1600 answers to 400 items" in md
    assert "right ~ subset * model has no finite estimate on these data: perfect separation" in md


def test_markdown_right_aligns_numbers_and_notes_speak_words(paper_out):
    md = (paper_out / "report.md").read_text("utf-8")
    assert "| Model | n | Right | Partial | Wrong | Strict accuracy | 95% CI | Partial credit |\n" \
           "|---|---:|---:|---:|---:|---:|---:|---:|" in md
    notes = md.split("## Notes")[1]
    assert "**Missing data, gemma-4-31b**" in notes and "missing.gemma" not in notes
    assert note_heading("rank_correlation.bertscore_f1") == "Rank correlation, BERTScore-F1"
    assert note_heading("judge, agreement, rank_correlation.judge") == \
        "LLM judge, human × judge agreement, rank correlation, LLM judge"


def test_every_table_is_written_as_booktabs_latex_beside_its_tidy_csv(paper_out):
    md = (paper_out / "report.md").read_text("utf-8")
    tables = sorted((paper_out / "tables").glob("*.tex"))
    assert len(tables) == md.count("\n|---")
    for tex in tables:
        assert_booktabs(tex.read_text("utf-8"))
        assert tex.with_suffix(".csv").exists()
    gap = (paper_out / "tables" / "gap_by_model.tex").read_text("utf-8")
    assert r"claude-opus-5 & 95.0\% (190/200) & 12.0\% (24/200) & 83.0 pp" in gap
    assert r"7.5 $\times$ 10$^{-72}$" in gap and r"$\infty$" in gap and r"\begin{tabular}{lrrrrrrr}" in gap


def test_tables_csv_are_tidy_numbers_for_pandas_and_r(paper, paper_out):
    folder = paper_out / "tables"
    gap = pd.read_csv(folder / "gap_by_model.csv")
    numeric = pd.api.types.is_numeric_dtype
    assert not numeric(gap["model"]) and all(numeric(gap[c]) for c in gap.columns if c != "model")
    by_model = gap.set_index("model")
    assert by_model.loc["gpt-5.6-sol", "odds_ratio"] == np.inf  # written "inf": pandas and R read it
    assert by_model.loc["gemma-4-31b", "gap"] == paper.gap[3]["gap"] == pytest.approx(0.485)  # 48.5 pp
    assert by_model.loc["claude-opus-5", "fisher_p"] == paper.gap[0]["fisher_p"]  # every digit
    assert ",inf," in (folder / "gap_by_model.csv").read_text("utf-8")
    accuracy = pd.read_csv(folder / "accuracy_by_model.csv")
    assert pd.api.types.is_integer_dtype(accuracy["n"]) and accuracy["accuracy"].between(0, 1).all()
    assert list(accuracy.columns[:4]) == ["model", "n", "right", "partial"]
    cmh = pd.read_csv(folder / "pooled_odds_ratio.csv").iloc[0]
    assert cmh["cmh_p"] == paper.cmh["cmh_p"] > 0 and cmh["breslow_day_df"] == 3
    for path in set(folder.glob("*.csv")) - {folder / "index.csv"}:  # the index holds the captions
        frame = pd.read_csv(path, keep_default_na=False)
        text = frame.select_dtypes(exclude="number")
        for glyph in ("%", "×", "∞", "—", " pp", "10⁻", "[0."):
            assert not text.apply(lambda column: column.astype(str).str.contains(glyph, regex=False)).any().any(), \
                (path.name, glyph)


def test_files_are_named_by_what_they_hold(paper_out):
    folder = paper_out / "tables"
    names = {p.stem for p in folder.glob("*.csv")}
    assert {"accuracy_by_model", "accuracy_by_title", "gap_by_model", "logistic_terms", "pooled_odds_ratio",
            "surface_bleu2_by_subset", "surface_bertscore_f1_by_subset", "mcnemar_pairs", "scoring_regimes",
            "rank_correlation", "agreement_confusion", "validity_bleu2", "missing_data_by_model",
            "provenance_scoring", "index"} <= names
    assert not any(name[:1].isdigit() for name in names)
    index = pd.read_csv(folder / "index.csv")
    assert set(index["name"]) == names - {"index"} and index["tidy"].all()
    assert index.set_index("name").loc["gap_by_model", "section"] == "The contamination gap"
    confusion = pd.read_csv(folder / "agreement_confusion.csv")
    assert confusion["n"].sum() == 1598 and set(confusion["human"]) == {"right", "partial", "wrong"}


def test_a_table_without_tidy_data_is_written_as_displayed(tmp_path):
    """A section another module adds without a table name still gets its .tex and a .csv."""
    from contam.harness.report.texts.format import Section, Table
    from contam.harness.report.writers.tables import write_tables

    section = Section("Probe: min-k% prob", [], [Table(["Model", "AUC"], [["m1", "0.71"]], "A probe.")])
    write_tables(Report(), [section], tmp_path)
    assert (tmp_path / "probe_min_k_prob.tex").exists()
    assert pd.read_csv(tmp_path / "probe_min_k_prob.csv").to_dict("records") == [{"Model": "m1", "AUC": 0.71}]
    assert pd.read_csv(tmp_path / "index.csv")["tidy"].tolist() == [False]


def assert_booktabs(tex: str) -> None:
    for rule in (r"\toprule", r"\midrule", r"\bottomrule"):
        assert tex.count(rule) == 1, rule
    assert tex.index(r"\toprule") < tex.index(r"\midrule") < tex.index(r"\bottomrule")
    spec = re.search(r"\\begin\{tabular\}\{([lr]+)\}", tex).group(1)
    body = tex.split(r"\toprule")[1].split(r"\bottomrule")[0]
    rows = [line for line in body.splitlines() if line.endswith(r"\\")]
    assert rows and all(len(re.split(r"(?<!\\)&", row)) == len(spec) for row in rows)
    assert all(line.count("$") % 2 == 0 for line in tex.splitlines())  # math mode always closed


def test_latex_tables_compile(paper_out, tmp_path):
    if shutil.which("pdflatex") is None:
        skip_or_fail("pdflatex is not installed (apt-get install texlive-latex-base "
                     "texlive-latex-recommended)")
    document = tmp_path / "tables.tex"
    inputs = "\n".join(rf"\input{{{p}}}" for p in sorted((paper_out / "tables").glob("*.tex")))
    document.write_text("\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\usepackage{booktabs}\n"
                        f"\\begin{{document}}\n{inputs}\n\\end{{document}}\n", encoding="utf-8")
    result = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", document.name],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-2000:]
    assert (tmp_path / "tables.pdf").read_bytes().startswith(b"%PDF")


# -- figures for print --------------------------------------------------------------------------

def test_figures_are_print_sized_untitled_and_high_resolution(paper_out):
    for name, width in (("fig1_leaderboard", figures.COLUMN), ("fig2_contamination_gap", figures.COLUMN),
                        ("fig3_metric_disagreement", figures.FULL), ("fig4_per_title", figures.FULL)):
        with Image.open(paper_out / f"{name}.png") as image:
            assert image.info["dpi"][0] == pytest.approx(300, abs=1)
            assert image.width == pytest.approx(width * 300, abs=2)
        pdf = (paper_out / f"{name}.pdf").read_bytes()
        assert b"/Subtype /Image" not in pdf and b"/FontFile2" in pdf  # vector, TrueType text


def test_figure_titles_only_when_asked(paper):
    with figures.plt.rc_context(figures.STYLE):
        plain = figures.draw_figures(paper)
        titled = figures.draw_figures(paper, titles=True)
    assert set(plain) == set(figures.FIGURES)
    assert all(fig.get_suptitle() == "" for fig in plain.values())
    assert titled["fig2_contamination_gap"].get_suptitle() == figures.TITLES["fig2_contamination_gap"]
    for fig in (*plain.values(), *titled.values()):
        figures.close(fig)


def test_fig4_bars_are_per_title_accuracy_grouped_by_subset(paper):
    fig = figures.per_title(paper)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Pokémon Red", "Pokémon Crystal", "Pokémon Brown",
                                                             "Pokémon Prism"]
    heights = [round(p.get_height(), 1) for p in ax.patches]
    assert heights[:4] == [100.0, 100.0, 29.0, 29.0]  # gpt-5.6-sol, titles in order (Table 3)
    assert heights[4:8] == [97.0, 93.0, 8.0, 16.0]  # claude-opus-5
    assert {t.get_text() for t in ax.texts} == {"official (documented)", "fan (undocumented)"}
    figures.close(fig)


def test_fig3_leaves_out_empty_regimes_and_uses_a_grid(paper):
    fig = figures.metric_disagreement(paper)
    assert len(fig.axes) == 4 and fig.axes[0].get_subplotspec().get_gridspec().get_geometry() == (2, 2)
    figures.close(fig)


# -- escaping what users and models supply ------------------------------------------------------

def hostile_store(path):
    items = [(i, f"{t} {HOSTILE}" if t == "Doc A" else t, s) for i, t, s in ITEMS]
    answers = [(i, m, "an answer") for i, _, _ in items for m in (HOSTILE, "plain")]
    labels = [(i, m, "human", "right" if i.startswith("d") else "wrong") for i, m, _ in answers]
    scores = [(i, m, "bleu2", 0.4) for i, m, _ in answers]
    return make_store(path, items, answers, labels, scores)


def test_hostile_names_are_escaped_everywhere(tmp_path, contam):
    path = tmp_path / "h.duckdb"
    hostile_store(path).close()
    status, _, err = contam("report", "--store", path, "--contrast", "canon,hack", "--out", tmp_path / "r")
    assert status == 0, err
    md = (tmp_path / "r" / "report.md").read_text("utf-8")
    page = (tmp_path / "r" / "report.html").read_text("utf-8")
    rendered = MarkdownIt("commonmark").render(md)  # raw HTML on: what any Markdown viewer would show
    assert "<script>" not in rendered and "<script>" not in page and 'href="javascript' not in rendered
    assert "&lt;" not in md and md_cell(HOSTILE) in md and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "javascript:b" in page and 'href="javascript' not in page
    for tex in (tmp_path / "r" / "tables").glob("*.tex"):
        text = tex.read_text("utf-8")
        assert "<script>" not in text and "$x^2$" not in text
        assert_booktabs(text)
    assert latex_text(HOSTILE).startswith(r"\$x\textasciicircum{}2\$ \textless{}script\textgreater{}")


def test_markdown_escape_neutralises_markup():
    escaped = md_cell(HOSTILE)
    rendered = MarkdownIt("commonmark").render(escaped)  # raw HTML on, as a Markdown viewer may have it
    assert "<script>" not in rendered and "<a " not in rendered and "<code>" not in rendered
    assert r"\|" in escaped and r"\`tick\`" in escaped and r"100%\_" in escaped
    assert "&amp;" not in escaped and "&lt;" not in escaped  # plain Markdown: a backslash, no entity


def test_figure_labels_draw_dollars_as_text(tmp_path):
    with hostile_store(tmp_path / "h.duckdb") as store:
        report = build_report(store, contrast=("canon", "hack"))
    with figures.plt.rc_context(figures.STYLE):
        drawn = figures.draw_figures(report)
        for fig in drawn.values():
            figures.png_bytes(fig)  # mathtext would raise on "$x^2$ <script>..." or render x²
        labels = [t for fig in drawn.values() for ax in fig.axes
                  for t in (*ax.get_yticklabels(), *ax.get_xticklabels(), *ax.texts)]
        hostile = [t for t in labels if "$x^2$" in t.get_text()]
        assert hostile and not any(t.get_parse_math() for t in hostile)
    for fig in drawn.values():
        figures.close(fig)


def test_no_human_report_keeps_notes_in_words(tmp_path, contam):
    path = tmp_path / "s.duckdb"
    small_store(path).close()
    status, md, _ = contam("report", "--store", path, "--contrast", "canon,hack", "--format", "md")
    notes = md.split("## Notes")[1]
    assert status == 0 and "rank_correlation." not in notes and "metric_validity." not in notes
    assert "**Rank correlation, LLM judge**" in notes


def test_numbers_right_ids_and_names_left():
    from contam.harness.report.texts.format import Table

    table = Table(["Model", "n", "CI", "p", "Run", "sha256", "Sampling", "Subset"],
                  [["m1", "12", "[0.1, 0.2]", "7.5 × 10⁻⁷²", "20261201T003707478157-16040ac0", "8762" + "ab" * 30,
                    "—", "official"],
                   ["m2", "—", "—", "< 10⁻³⁰⁰", "20261201T003708000000-aaaa0000", "c" * 64, "—", "fan"]])
    assert table.numeric_columns() == [False, True, True, True, False, False, False, False]


def test_figure_titles_flag_reaches_the_figures(tmp_path, contam, monkeypatch):
    seen = []
    draw = figures.draw_figures
    monkeypatch.setattr(figures, "draw_figures", lambda report, titles=False: seen.append(titles) or
                        draw(report, titles))
    path = tmp_path / "s.duckdb"
    small_store(path).close()
    assert contam("report", "--store", path, "--contrast", "canon,hack", "--out", tmp_path / "a")[0] == 0
    assert contam("report", "--store", path, "--contrast", "canon,hack", "--out", tmp_path / "b",
                  "--figure-titles")[0] == 0
    assert seen == [False, True]


def test_interaction_model_reading_in_markdown_and_html(tmp_path, contam):
    right = {"m1": {"d1", "d3", "u1"}, "m2": {"d1", "d2", "u2"}, "m3": {"d2", "d3", "u1", "u3"}}
    answers = [(i, m, "an answer") for i, _, _ in ITEMS for m in right]
    labels = [(i, m, "human", "right" if i in right[m] else "wrong") for i, m, _ in answers]
    path = tmp_path / "i.duckdb"
    make_store(path, ITEMS, answers, labels).close()
    status, md, _ = contam("report", "--store", path, "--contrast", "canon,hack", "--format", "md")
    assert status == 0
    section = md.split("## Contamination across models")[1].split("\n## ")[0]
    assert "**Logistic model** right ~ subset * model on 18 answers to 6 items" in section
    assert re.search(r"for the reference model m3 the odds ratio documented vs undocumented [\d.]+, 95% CI "
                     r"\[[\d.]+, [\d.]+\], p = [\d.]+; the Wald test of the 2 interaction terms gives χ² = "
                     r"[\d.]+, p = [\d.]+: no evidence that the gap differs between models\.", section)
    assert "| documented × model m1 |" in section
    status, page, _ = contam("report", "--store", path, "--contrast", "canon,hack", "--format", "html")
    assert "<strong>Logistic model</strong> right ~ subset * model" in page
