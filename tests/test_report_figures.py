"""Figure labels as the tables print them and clear of every error bar
and of the next panel, a visible mark for a 0 bar, sane axes for all-zero panels, x labels inside
the figure, and one colour per model and per subset in every figure. Checked on the drawn
artists' window extents (what the PNG shows)."""

from __future__ import annotations

import dataclasses

import matplotlib.colors as mcolors
import pytest

from contam.harness.report.plots import paper as figures
from contam.harness.report.analysis import build_report
from contam.harness.report.plots.style import MODEL_PALETTE, SUBSET_COLOURS, model_colours
from contam.harness.report.texts.format import fmt_pp
from contam.harness.report.texts.markdown import sections
from tests.test_analysis import make_store

ZERO_MODEL, LONG_JUDGE = "qwen3:8b", "judge:claude-sonnet-5-20260101-with-a-long-suffix"


@pytest.fixture(scope="module")
def edge(tmp_path_factory):
    return edge_report(tmp_path_factory.mktemp("edge"))


def edge_report(folder):
    """Three models, one right on nothing; every BLEU-2 is 0; a judge with a long rater name."""
    items = [(f"d{i}", f"Doc {i % 2}", "official") for i in range(20)] + \
            [(f"u{i}", f"Hack {i % 2}", "fan") for i in range(20)]
    models = ("gemma4:31b-cloud", ZERO_MODEL, "llama3:70b")
    answers = [(i, m, "an answer") for i, _, _ in items for m in models]
    right = {"gemma4:31b-cloud": lambda n: n < 16 or n in (20, 21, 22), ZERO_MODEL: lambda n: False,
             "llama3:70b": lambda n: n < 10 or n == 30}
    number = {i: k for k, (i, _, _) in enumerate(items)}
    labels = [(i, m, "human", "right" if right[m](number[i]) else "wrong") for i, m, _ in answers]
    judge = [(i, m, LONG_JUDGE, "right" if right[m](number[i]) else "wrong") for i, m, _ in answers]
    scores = [(i, m, "bleu2", 0.0) for i, m, _ in answers]
    with make_store(folder / "e.duckdb", items, answers, labels + judge, scores) as store:
        return build_report(store)


@pytest.fixture
def draw():
    """draw(figure_function, report) -> (figure, renderer), drawn in the report's style; closed after."""
    drawn = []

    def run(function, report):
        with figures.plt.rc_context(figures.STYLE):
            fig = function(report)
            fig.canvas.draw()
        drawn.append(fig)
        return fig, fig.canvas.get_renderer()

    yield run
    for fig in drawn:
        figures.close(fig)


def errorbar_boxes(ax) -> list[tuple[float, float, float, float]]:
    """Display-space boxes (x0, y0, x1, y1) of every error bar's line and of each of its caps."""
    boxes = []
    for container in ax.containers:
        errorbar = getattr(container, "errorbar", None)
        if errorbar is None:
            continue
        _, caplines, barlines = errorbar.lines
        for collection in barlines:
            for segment in collection.get_segments():
                xy = ax.transData.transform(segment)
                boxes.append((*xy.min(axis=0), *xy.max(axis=0)))
        for cap in caplines:
            half = cap.get_markersize() * ax.figure.dpi / 72 / 2
            boxes += [(x - half, y - half, x + half, y + half) for x, y in ax.transData.transform(cap.get_xydata())]
    return boxes


def overlaps(extent, box) -> bool:
    x0, y0, x1, y1 = box
    return extent.x0 < x1 and extent.x1 > x0 and extent.y0 < y1 and extent.y1 > y0


# -- item 7 -------------------------------------------------------------------------------------

def test_fig2_gap_labels_print_the_tables_rounding(paper, draw):
    fig, _ = draw(figures.contamination_gap, paper)
    labels = [t.get_text() for t in fig.axes[0].texts]
    table = next(s for s in sections(paper) if s.heading == "The contamination gap").tables[0]
    gap_column = table.headers.index("Gap")
    assert labels == [row[gap_column] for row in table.rows] == [fmt_pp(r["gap"]) for r in paper.gap]
    assert "48.5 pp" in labels  # gemma-4-31b: round(48.5) would print 48


def test_fig3_panel_a_values_sit_by_their_bars_clear_of_panel_b(paper, draw):
    fig, renderer = draw(figures.metric_disagreement, paper)
    panel_a, panel_b = fig.axes[:2]
    b_box = panel_b.get_tightbbox(renderer)  # its spine and tick marks included
    highs = [100 * r["ci_high"] for r in paper.overall]
    for text, high in zip(panel_a.texts, highs):
        extent = text.get_window_extent(renderer)
        assert not extent.overlaps(b_box) and extent.x1 < panel_a.bbox.x1
        gap_points = (extent.x0 - panel_a.transData.transform((high, 0))[0]) * 72 / fig.dpi
        assert 0 < gap_points < 6, text.get_text()  # next to its own interval, not in a column far off


# -- item 24 ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["leaderboard", "contamination_gap", "metric_disagreement"])
def test_value_labels_never_touch_an_error_bar(paper, edge, draw, name):
    for report in (paper, edge):
        fig, renderer = draw(getattr(figures, name), report)
        for ax in fig.axes:
            boxes = errorbar_boxes(ax)
            assert boxes or not ax.texts
            for text in ax.texts:
                extent = text.get_window_extent(renderer)
                assert not any(overlaps(extent, box) for box in boxes), (name, text.get_text())
                assert extent.y1 <= ax.bbox.y1 + 1 and extent.x1 <= fig.bbox.x1  # inside the drawing


def test_an_all_zero_score_panel_keeps_a_unit_axis(edge, draw):
    fig, _ = draw(figures.metric_disagreement, edge)
    bleu = next(ax for ax in fig.axes if "BLEU-2" in ax.get_title(loc="left"))
    low, high = bleu.get_xlim()
    assert low == 0 and high >= 1  # not 0 to 1.3e-9
    assert [t.get_text() for t in bleu.texts] == ["0.000"] * 3


def test_zero_bars_get_a_visible_baseline_mark(edge, draw):
    colour = model_colours(edge)[ZERO_MODEL]
    fig, _ = draw(figures.leaderboard, edge)
    (ax,) = fig.axes
    row = [t.get_text().split("\n")[0] for t in ax.get_yticklabels()].index(ZERO_MODEL)
    marks = [line for line in ax.lines if list(line.get_xdata()) == [0, 0]
             and mcolors.same_color(line.get_color(), colour) and line.get_linewidth() >= 2]
    assert len(marks) == 1 and sorted(marks[0].get_ydata()) == pytest.approx([row - 0.3, row + 0.3])
    fig, _ = draw(figures.contamination_gap, edge)
    flat = [line for line in fig.axes[0].lines if list(line.get_ydata()) == [0, 0] and line.get_linewidth() >= 2]
    colours = {mcolors.to_hex(line.get_color()) for line in flat}
    assert len(flat) == 2 and colours == {c.lower() for c in SUBSET_COLOURS.values()}  # qwen3:8b's two 0 bars


def test_fig1_x_label_stays_inside_the_figure(edge, draw):
    """Without human labels fig1 names the judge in its x label: a long rater name once ran off
    both sides of the column figure."""
    fig, renderer = draw(figures.leaderboard, dataclasses.replace(edge, overall=None))
    label = fig.axes[0].xaxis.label
    extent = label.get_window_extent(renderer)
    assert 0 <= extent.x0 and extent.x1 <= fig.bbox.x1 and extent.y0 >= 0
    assert " ".join(label.get_text().split()).startswith("strict accuracy (%), LLM judge, not human (judge:claude")


def test_one_colour_per_model_and_per_subset_in_every_figure(paper, draw):
    colours = model_colours(paper)
    assert not set(colours.values()) & set(SUBSET_COLOURS.values()) and set(colours.values()) <= set(MODEL_PALETTE)
    seen: dict[str, set[str]] = {m: set() for m in colours}
    fig, _ = draw(figures.leaderboard, paper)
    for tick, bar in zip(fig.axes[0].get_yticklabels(), fig.axes[0].patches):
        seen[tick.get_text().split("\n")[0]].add(mcolors.to_hex(bar.get_facecolor()))
    fig, _ = draw(figures.metric_disagreement, paper)
    for ax in fig.axes:
        for model, bar in zip(colours, ax.patches):  # every panel in the report's model order
            seen[model].add(mcolors.to_hex(bar.get_facecolor()))
    fig, _ = draw(figures.per_title, paper)
    legend = fig.legends[0]
    for handle, text in zip(legend.legend_handles, legend.get_texts()):
        seen[text.get_text()].add(mcolors.to_hex(handle.get_facecolor()))
    assert {m: s for m, s in seen.items()} == {m: {colours[m].lower()} for m in colours}
    fig, _ = draw(figures.contamination_gap, paper)
    sides = {mcolors.to_hex(bar.get_facecolor()) for bar in fig.axes[0].patches}
    assert sides == {c.lower() for c in SUBSET_COLOURS.values()}


def test_panels_come_in_one_order(store_path, draw):
    """Without labels, figures 1 and 2 both show BLEU-2 then BERTScore-F1, as figure 3 does."""
    from tests.test_analysis import surface_store

    with surface_store(store_path) as store:
        report = build_report(store, contrast=("canon", "hack"))
    for function in (figures.leaderboard, figures.contamination_gap, figures.metric_disagreement):
        fig, _ = draw(function, report)
        titles = [ax.get_title(loc="left") or ax.get_title() for ax in fig.axes]
        assert [t.split(":")[0].split(") ")[-1] for t in titles] == ["BLEU-2", "BERTScore-F1"], titles
