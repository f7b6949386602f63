"""The report's methods corrections (issue 30 items 15-20, 22): each statistic checked against
independent code (scikit-learn, SciPy, statsmodels, or brute-force enumeration)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from harness.report.analysis import build_report
from harness.store import Store, utc_now

CONTRAST = ("canon", "hack")


def store_of(path: Path, items, answers, labels) -> Path:
    now = utc_now()
    with Store(path, create=True) as store, store.transaction():
        store.append("items", [{"item_id": i, "title": "T", "subset": s, "question": "q?", "reference": "r",
                                "added_at": now} for i, s in items])
        store.append("answers", [{"item_id": i, "model": m, "answer": a, "answer_raw": a, "created_at": now}
                                 for i, m, a in answers])
        store.append("labels", [{"item_id": i, "model": m, "rater": r, "label": lab, "created_at": now}
                                for i, m, r, lab in labels])
    return path


# -- item 15: human × judge κ over the cells both labelled ----------------------------------------

def kappa_store(path: Path) -> Path:
    """20 items × 2 models; blanks, unanswered items and unlabelled cells on both sides."""
    items = [(f"i{n:02d}", "canon" if n < 10 else "hack") for n in range(20)]
    cycle = ("right", "partial", "wrong")
    answers, labels = [], []
    for n, (item, _) in enumerate(items):
        for k, model in enumerate(("ma", "mb")):
            if (n + k) % 7 == 3:
                continue  # unanswered: both sides impute wrong
            answers.append((item, model, "" if (n + k) % 5 == 1 else f"answer {n}"))
            if (n + k) % 4 != 2:
                labels.append((item, model, "human", cycle[(n * 2 + k) % 3]))
            if (n + k) % 6 != 5:
                labels.append((item, model, "judge:j", cycle[(n + k * 2) % 3]))
    return store_of(path, items, answers, labels)


def test_item15_kappa_is_over_cells_both_labelled_as_the_view_has_it(tmp_path):
    from harness.view.agreement import agreement as view_agreement

    with Store(kappa_store(tmp_path / "k.duckdb"), read_only=True) as store:
        report = build_report(store, contrast=CONTRAST)
        pairs = store.query("SELECT h.label, j.label FROM latest_labels h JOIN latest_labels j "
                            "USING (item_id, model) WHERE h.rater = 'human' AND j.rater = 'judge:j'")
        view = view_agreement(store).judges[0]
    pooled = report["agreement"]["pooled"]
    human, judge = zip(*pairs)
    assert pooled["n"] == len(pairs) == view["n"]
    assert pooled["kappa"] == pytest.approx(cohen_kappa_score(human, judge)) == view["kappa"]
    assert pooled["kappa_linear"] == pytest.approx(cohen_kappa_score(
        human, judge, labels=["right", "partial", "wrong"], weights="linear"))
    grid = report["missing"]
    blank_or_unanswered = sum(r["empty"] + r["no_answer"] for r in grid)
    assert 0 < report["agreement"]["imputed"] <= blank_or_unanswered


def test_item15_report_states_the_imputed_cells_apart(tmp_path):
    from harness.jobs.report import render

    with Store(kappa_store(tmp_path / "k.duckdb"), read_only=True) as store:
        report = build_report(store, contrast=CONTRAST)
    md = render(report, "md")
    imputed = report["agreement"]["imputed"]
    assert f"over the cells both labelled, labels as given; {imputed} cells with an imputed label" in md
