"""The cell page and the agreement page as served: attempts named by what they
asked for (the answer, or judge:NAME), times to the second, scores by their display names; κ with
its asymptotic interval, a confusion table per pair, and a settling sentence that reads plainly."""

from __future__ import annotations

import html
import json
import re
from datetime import datetime, timedelta

import pytest

from contam.harness.config_schema import METRIC_DISPLAY, metric_display
from contam.harness.report.statistics import named_tests as stats
from contam.harness.store import Store, utc_now
from contam.harness.view import browse
from tests.viewkit import JUDGE, MODELS, build_view_store, view_client

STARTED = datetime(2026, 12, 3, 22, 41, 7, 123456)
LONG_ERROR = "upstream said: " + "the model is overloaded, try again later; " * 8


def _cells(page: str, css_class: str) -> list[str]:
    """The texts of the page's table cells that carry ``css_class``."""
    found = re.findall(r'<td data-label="[^"]*" class="([^"]*)">(.*?)</td>', page, re.S)
    return [html.unescape(text) for classes, text in found if css_class in classes.split()]


@pytest.fixture(scope="module")
def cell_page(tmp_path_factory):
    """it001 of the first model: answered by run r1 after a 429, judged by run j1 after a
    malformed reply."""
    path = build_view_store(tmp_path_factory.mktemp("cell") / "c.duckdb", items=3)
    with Store(path) as store:
        store.append("runs", [{"run_id": "r1", "kind": "run", "started_at": STARTED, "config": "{}"},
                              {"run_id": "j1", "kind": "judge", "started_at": STARTED,
                               "config": json.dumps({"judge": {"name": "grader-x"}})}])
        store.append("attempts", [
            {"run_id": "r1", "item_id": "it001", "model": MODELS[0], "attempt": 1,
             "started_at": STARTED, "outcome": "rate_limited", "http_status": 429, "error": LONG_ERROR},
            {"run_id": "r1", "item_id": "it001", "model": MODELS[0], "attempt": 2,
             "started_at": STARTED + timedelta(seconds=2), "outcome": "ok", "http_status": 200},
            {"run_id": "j1", "item_id": "it001", "model": MODELS[0], "attempt": 1,
             "started_at": STARTED + timedelta(minutes=5), "outcome": "malformed", "error": "Maybe"},
        ])
    client = view_client(path, unblind=True)
    response = client.get("/cell", params={"item": "it001", "model": MODELS[0]})
    assert response.status_code == 200
    return response.text


def test_the_attempts_say_whether_they_asked_for_the_answer_or_the_judge(cell_page):
    assert _cells(cell_page, "asked-for") == ["answer", "answer", "judge:grader-x"]
    assert _cells(cell_page, "outcome") == ["rate_limited", "ok", "malformed"]
    assert _cells(cell_page, "error-text") == [LONG_ERROR, "", "Maybe"]  # whole, never cut


def test_times_are_shown_to_the_second(cell_page):
    assert "2026-12-03 22:41:07" in cell_page
    assert "22:41:07.123456" not in cell_page and not re.search(r"\d\d:\d\d:\d\d\.\d", cell_page)


def test_scores_are_named_as_the_browse_page_names_them(cell_page):
    names = re.findall(r"<dt>(.*?)</dt>", re.search(r'<dl class="meta" id="scores">(.*?)</dl>',
                                                     cell_page, re.S).group(1))
    assert names[:2] == ["BERTScore-F1", "BLEU-2"] and JUDGE in names
    assert "bleu2" not in names and "bertscore_f1" not in names


def test_one_display_name_mapping_serves_browse_cell_and_report():
    from contam.harness.report.inputs.cells import METRICS
    from contam.harness.report.parts.rule_metrics import RULE_METRICS

    for metric in ("bleu2", "bertscore_f1"):
        assert browse.COLUMNS[metric][0] == METRICS[metric] == metric_display(metric)
    assert all(RULE_METRICS[m] == METRIC_DISPLAY[m] for m in RULE_METRICS)
    assert metric_display("some_new_metric") == "some_new_metric"


# -- the agreement page ------------------------------------------------------------------------

ANN = ["right", "right", "partial", "wrong", "wrong", "right", "partial", "wrong", "right", "right"]
BO = ["right", "partial", "partial", "wrong", "right", "right", "wrong", "wrong", "right", "partial"]


@pytest.fixture(scope="module")
def agree_page(tmp_path_factory):
    """Two raters on it000..it004 of both models; bo alone on it005 (one rater is no agreement)."""
    path = build_view_store(tmp_path_factory.mktemp("agree") / "a.duckdb", items=6)
    cells = [(f"it{n:03d}", m) for n in range(5) for m in MODELS]
    rows = [{"item_id": i, "model": m, "rater": rater, "label": label, "created_at": utc_now()}
            for rater, labels in (("human:ann", ANN), ("human:bo", BO))
            for (i, m), label in zip(cells, labels)]
    rows.append({"item_id": "it005", "model": MODELS[0], "rater": "human:bo", "label": "right",
                 "created_at": utc_now()})
    with Store(path) as store:
        store.append("labels", rows)
    return view_client(path).get("/agree").text


def test_kappa_comes_with_its_asymptotic_interval(agree_page):
    confusion = stats.confusion_matrix(list(zip(ANN, BO)), ("right", "partial", "wrong"))
    low, high = stats.cohen_kappa_interval(confusion)
    pair = re.search(r'<section aria-labelledby="h-pairs".*?</section>', agree_page, re.S).group(0)
    assert _cells(pair, "kappa") == [f"{stats.cohen_kappa(confusion):.3f}"]
    assert _cells(pair, "kappa-ci") == [f"[{low:.2f}, {high:.2f}]"]
    assert "asymptotic interval" in agree_page and "Fleiss, Cohen and Everitt" in agree_page


def test_the_interval_is_statsmodels_one():
    from statsmodels.stats.inter_rater import cohens_kappa

    for table in ([[5, 1, 0], [2, 4, 1], [0, 1, 6]], [[20, 3, 1], [9, 2, 4], [0, 5, 11]]):
        expected = cohens_kappa(table)
        assert stats.cohen_kappa_interval(table) == pytest.approx(
            (expected.kappa_low, expected.kappa_upp), abs=1e-12)
    assert all(v != v for v in stats.cohen_kappa_interval([[3, 0, 0], [0, 0, 0], [0, 0, 0]]))


def test_each_pair_has_its_confusion_table(agree_page):
    caption = "human:ann (rows) against human:bo (columns), 10 cells"
    assert caption in agree_page
    table = agree_page.split(caption, 1)[1].split("</table>", 1)[0]
    counts = [[int(c) for c in re.findall(r'<td class="num[^"]*">([\d,]+)</td>', row)]
              for row in re.findall(r"<tr><th scope=\"row\">.*?</tr>", table, re.S)]
    assert counts == stats.confusion_matrix(list(zip(ANN, BO)), ("right", "partial", "wrong"))
    judge = "human:ann (rows) against judge:grader-x (columns), 10 cells"
    assert judge in agree_page


def test_the_settling_sentence_reads_plainly(agree_page):
    agreed = sum(a == b for a, b in zip(ANN, BO))
    text = " ".join(re.sub(r"<[^>]+>", " ", re.search(r'<p id="agreed-text">(.*?)</p>', agree_page,
                                                     re.S).group(1)).split())
    assert text.startswith(f"{agreed} cells got the same label from every rater who labelled them "
                           "(two raters or more), but have no final label saying so yet.")


def test_times_and_intervals_read_the_same_through_a_job_s_host():
    """Through a running job's host a time arrives as ISO text, from the file as a datetime."""
    from contam.harness.view.formats import interval, when

    assert when(STARTED) == when(STARTED.isoformat()) == "2026-12-03 22:41:07"
    assert when(None) == when("") == ""
    assert interval((0.2134, 0.6789)) == "[0.21, 0.68]"
    assert interval((float("nan"), float("nan"))) == interval(None) == "–"
