"""A report shaped by what the study has: the contrast the report picks by itself (and never fails
on), no header-only table and no empty figure, a "Not in this report" list naming what would add
each missing section, optional titles, and report.md as plain Markdown."""

from __future__ import annotations

import json

import numpy as np
import pytest

from contam.harness.jobs.score import score_store
from contam.harness.report.analysis import build_report
from contam.harness.report.plots.paper import draw_figures
from contam.harness.report.texts.markdown import sections
from contam.harness.store import Store, utc_now
from contam.harness.study import StudySettings

SUBSETS = ("core", "obscure", "popular")
CONTRAST_SECTIONS = ("## The contamination gap", "## Contamination across models", "## Surface metrics by subset")


def build_store(path, *, subsets=SUBSETS, labels: bool = False, titles: bool = False, models=("A", "B"),
                exposure=lambda i, rng: str(rng.uniform(0, 4)), metrics=("exact", "contains")):
    """60 items over ``subsets``, an exposure field ``pop``, two models answering right more often
    at higher exposure, scored by ``metrics``; human labels that agree with the rule metrics."""
    rng = np.random.default_rng(3)
    items, answers, rated = [], [], []
    for i in range(60):
        pop = exposure(i, rng)
        items.append({"item_id": f"i{i}", "title": f"T{i % 4}" if titles else None,
                      "subset": subsets[i % len(subsets)] if subsets else None, "question": f"Q{i}?",
                      "reference": f"cap{i}", "extra": json.dumps({"pop": pop}), "added_at": utc_now()})
        for model in models:
            level = float(pop) if pop.strip() else 2.0
            text = f"cap{i}" if rng.random() < 1 / (1 + np.exp(2 - level)) else "other"
            answers.append({"item_id": f"i{i}", "model": model, "answer_raw": text, "answer": text,
                            "created_at": utc_now()})
            rated.append({"item_id": f"i{i}", "model": model, "rater": "human",
                          "label": "right" if text == f"cap{i}" else "wrong", "created_at": utc_now()})
    with Store(path, create=True) as store:
        store.append("items", items)
        store.append("answers", answers)
        if labels:
            store.append("labels", rated)
        score_store(store, list(metrics), study=StudySettings())
    return path


def write_config(folder, lines: list[str]):
    path = folder / "study.toml"
    path.write_text("[study]\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def report_of(path, **options):
    with Store(path, read_only=True) as store:
        return build_report(store, **options)


def assert_no_header_only_table(md: str) -> None:
    """Every Markdown table's rule line is followed by at least one body row."""
    lines = md.splitlines()
    for n, line in enumerate(lines):
        if line.startswith("|---"):
            assert n + 1 < len(lines) and lines[n + 1].startswith("|"), lines[n - 1]


def not_in_report(md: str) -> str:
    assert md.count("## Not in this report") == 1
    return md.split("## Not in this report", 1)[1]


# -- the contrast the report picks ----------------------------------------------------------------

def test_subsets_that_are_not_the_papers_give_a_report_without_contrast_sections(tmp_path, contam):
    out = tmp_path / "out"
    status, _, err = contam("report", "--store", build_store(tmp_path / "s.duckdb"), "--out", out)
    assert status == 0, err
    md = (out / "report.md").read_text()
    report = json.loads((out / "report.json").read_text())
    assert report["contrast"] is None and report["gap"] is None and report["surface_by_subset"] is None
    assert not any(heading in md for heading in CONTRAST_SECTIONS)
    assert "`--contrast A,B` compares two of them" in md  # the overview's one line
    assert "`--contrast A,B` adds it" in not_in_report(md)
    assert not (out / "fig2_contamination_gap.png").exists()


def test_the_studys_first_and_last_tier_are_the_contrast(tmp_path):
    from contam.harness.report.inputs.study_settings import StudyInputs

    report = report_of(build_store(tmp_path / "s.duckdb", labels=True),
                       study=StudyInputs(StudySettings(subsets=("popular", "core", "obscure"))))
    assert report.contrast == {"documented": "popular", "undocumented": "obscure"}
    assert report.gap and report.without_contrast is None


def test_the_papers_pair_is_the_default_where_the_store_has_both(tmp_path):
    report = report_of(build_store(tmp_path / "s.duckdb", subsets=("official", "fan", "other"), labels=True))
    assert report.contrast == {"documented": "official", "undocumented": "fan"} and report.gap


def test_a_contrast_the_user_names_is_still_checked(tmp_path, contam):
    status, _, err = contam("report", "--store", build_store(tmp_path / "s.duckdb"), "--out", tmp_path / "out",
                            "--contrast", "core,fan")
    assert status == 2 and "'fan' has no items" in err and not (tmp_path / "out").exists()


def test_one_tier_says_a_trend_needs_two_tiers_and_exits_zero(tmp_path, contam):
    out = tmp_path / "out"
    config = write_config(tmp_path, ['subsets = ["core"]'])
    status, _, err = contam("report", "--store", build_store(tmp_path / "s.duckdb", labels=True), "--out", out,
                            "--config", config)
    assert status == 0, err
    md = (out / "report.md").read_text()
    assert "a trend needs two tiers or more" in not_in_report(md)
    assert "## Accuracy across ordered tiers" not in md and "--contrast:" not in md


# -- no empty table or figure; what is missing is named -------------------------------------------

def test_a_label_less_study_has_no_header_only_table_and_no_empty_figure(tmp_path, contam):
    out = tmp_path / "out"
    config = write_config(tmp_path, ['exposure = "pop"'])
    status, _, err = contam("report", "--store", build_store(tmp_path / "s.duckdb"), "--out", out,
                            "--config", config)
    assert status == 0, err
    md = (out / "report.md").read_text()
    assert_no_header_only_table(md)
    assert "## Exposure" not in md and "## Scoring regimes" not in md
    missing = not_in_report(md)
    assert "**Exposure**: no cell has a right or wrong answer" in missing
    assert "`contam judge CONFIG` adds them" in missing and "`contam import labels FILE`, or `[study] correct`" in missing
    assert sorted(p.name for p in out.glob("*.png")) == []  # nothing to draw: no figure at all
    assert "no pooled fit" not in md


def test_every_figure_a_section_names_is_drawn_and_no_other(tmp_path):
    report = report_of(build_store(tmp_path / "s.duckdb", labels=True))
    named = {name for section in sections(report) for name in section.figures}
    drawn = draw_figures(report)
    assert set(drawn) == named == {"fig1_leaderboard", "fig3_metric_disagreement"}


def test_label_less_figures_have_a_panel_only_for_each_scored_metric(tmp_path):
    from contam.harness.report.plots.paper import close

    report = report_of(build_store(tmp_path / "s.duckdb", subsets=("official", "fan"), metrics=("bleu2",)))
    drawn = draw_figures(report)
    try:  # BLEU-2 alone was asked for: no BERTScore panel stands empty beside it
        assert [len(drawn[name].axes) for name in ("fig1_leaderboard", "fig2_contamination_gap")] == [1, 1]
    finally:
        for fig in drawn.values():
            close(fig)


def test_the_papers_report_has_no_not_in_this_report_list(paper):
    assert paper.not_in_report == []
    assert "Not in this report" not in [s.heading for s in sections(paper)]


def test_every_exposure_blank_is_a_note_saying_so(tmp_path):
    from contam.harness.report.inputs.study_settings import StudyInputs

    report = report_of(build_store(tmp_path / "s.duckdb", labels=True, exposure=lambda i, rng: " "),
                       study=StudyInputs(StudySettings(exposure="pop")))
    assert report.exposure is None and "exposure" not in report.to_json()
    assert [n.reason for n in report.notes if n.section == "exposure"] == [
        "every item's 'pop' value is blank: no exposure fit"]
    assert any(r["section"] == "Exposure" and "blank" in r["reason"] for r in report.not_in_report)


# -- titles are optional --------------------------------------------------------------------------

def test_a_study_without_titles_has_no_per_title_section_or_figure(tmp_path):
    report = report_of(build_store(tmp_path / "s.duckdb", subsets=("official", "fan"), labels=True,
                                   metrics=("exact", "bleu2")))
    headings = [s.heading for s in sections(report)]
    assert report.per_title is None and "Per-title accuracy" not in headings
    assert "fig4_per_title" not in draw_figures(report)
    assert any(r["section"].startswith("Per-title accuracy") for r in report.not_in_report)
    surface = next(s for s in sections(report) if s.heading == "Surface metrics by subset")
    assert all(t.rows for t in surface.tables)


def test_a_study_with_titles_has_its_per_title_section(tmp_path):
    report = report_of(build_store(tmp_path / "s.duckdb", subsets=("official", "fan"), labels=True, titles=True))
    assert {r["title"] for r in report.per_title} == {"T0", "T1", "T2", "T3"}


# -- plain Markdown -------------------------------------------------------------------------------

@pytest.mark.parametrize("text, plain", [
    ("human:<name>", "human:\\<name>"),  # would open a tag: escaped, but never as an entity
    ("a & b < c", "a & b < c"),
    ("_x_", "\\_x\\_"),
    ("paper_data.py r_pb", "paper_data.py r_pb"),  # inside a word an underscore is no emphasis
    ("a|b *c* `d`", "a\\|b \\*c\\* \\`d\\`"),
    ("[x](y)", "[x\\](y)"),
])
def test_md_cell_escapes_only_what_markdown_would_read_as_markup(text, plain):
    from contam.harness.report.texts.format import md_cell

    assert md_cell(text) == plain


def test_report_md_has_no_html_entities(tmp_path, contam):
    out = tmp_path / "out"
    status, _, err = contam("report", "--store", build_store(tmp_path / "s.duckdb", models=("m_1 & <co>", "b")),
                            "--out", out)
    assert status == 0, err
    md = (out / "report.md").read_text()
    assert "m_1 & \\<co>" in md
    assert not any(entity in md for entity in ("&lt;", "&gt;", "&amp;"))


def test_the_view_shows_a_dash_for_an_item_without_a_title(tmp_path):
    from tests.viewkit import MODELS, build_view_store, view_client

    path = build_view_store(tmp_path / "v.duckdb", items=4)
    with Store(path) as store:
        store.append("items", [{"item_id": "it001", "title": None, "subset": "fanstratum",
                                "question": "Question number 1?", "reference": "Reference 1.",
                                "added_at": utc_now()}])  # the newest version of it001: no title
    client = view_client(path)
    cell = client.get(f"/cell?item=it001&model={MODELS[0]}").text
    browse = client.get("/").text
    assert '<p class="title muted">— · fanstratum · item it001' in cell
    assert "None" not in cell and ">None<" not in browse
