"""The report's methods corrections: each statistic checked against
independent code (scikit-learn, SciPy, statsmodels, or brute-force enumeration)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from contam.harness.report.analysis import build_report
from contam.harness.store import Store, utc_now

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


def test_kappa_is_over_cells_both_labelled_as_the_view_has_it(tmp_path):
    from contam.harness.view.agreement import agreement as view_agreement

    with Store(kappa_store(tmp_path / "k.duckdb"), read_only=True) as store:
        report = build_report(store, contrast=CONTRAST)
        both = ("FROM latest_labels h JOIN latest_labels j USING (item_id, model) "
                "WHERE h.rater = 'human' AND j.rater = 'judge:j'")
        pairs = store.query(f"SELECT h.label, j.label {both} AND (item_id, model) IN "
                            "(SELECT item_id, model FROM latest_answers WHERE trim(answer) <> '')")
        labelled = store.query(f"SELECT count(*) {both}")[0][0]
        view = view_agreement(store).judges[0]
    pooled = report.agreement["pooled"]
    human, judge = zip(*pairs)
    assert pooled["n"] == len(pairs) < labelled == view["n"]  # the view counts the raters' labels
    assert pooled["kappa"] == pytest.approx(cohen_kappa_score(human, judge))
    assert pooled["kappa_linear"] == pytest.approx(cohen_kappa_score(
        human, judge, labels=["right", "partial", "wrong"], weights="linear"))
    grid = report.missing
    blank_or_unanswered = sum(r["empty"] + r["no_answer"] for r in grid)
    assert 0 < report.agreement["imputed"] <= blank_or_unanswered


def test_report_states_the_imputed_cells_apart(tmp_path):
    from contam.harness.jobs.report import render

    with Store(kappa_store(tmp_path / "k.duckdb"), read_only=True) as store:
        report = build_report(store, contrast=CONTRAST)
    md = render(report, "md")
    imputed = report.agreement["imputed"]
    assert f"over the cells both labelled, labels as given; {imputed} cells with an imputed label" in md


# -- item 16: Holm within each model's probe family --------------------------------------------

def probed_report(tmp_path: Path) -> dict:
    from tests.test_report_partial import CANON, CONTRAST as PARTIAL_CONTRAST, EVERY, Case, build_store

    case = Case(human={"human": {"m1": EVERY}},
                probes={"cdd": {"m1": EVERY, "m2": EVERY}, "ts-guess": {"m1": EVERY, "m2": EVERY},
                        "guided": {"m1": EVERY, "m2": EVERY}, "min-k": {"m1": EVERY, "m3": CANON}})
    with Store(build_store(tmp_path / "p.duckdb", case), read_only=True) as store:
        return build_report(store, contrast=PARTIAL_CONTRAST)


def test_holm_adjusts_each_models_probe_p_values_together(tmp_path):
    from statsmodels.stats.multitest import multipletests

    probes = probed_report(tmp_path).probes
    members = [(row, column) for kind, key, column in (
        ("cdd", "contrast", "fisher_p"), ("ts-guess", "tests", "fisher_p"), ("guided", "differences", "p"),
        ("min-k", "rows", "mannwhitney_p")) for row in probes[kind][key]]
    for model in ("m1", "m2", "m3"):
        rows = [(row, column) for row, column in members if row["model"] == model]
        defined = [(row, row[column]) for row, column in rows if row[column] == row[column]]
        expected = multipletests([p for _, p in defined], method="holm")[1]
        assert [row["p_holm"] for row, _ in defined] == pytest.approx(list(expected))
        assert all(row["holm_family_size"] == len(defined) for row, _ in rows)
    m1 = [row for row, _ in members if row["model"] == "m1"]
    assert len(m1) == 1 + 1 + 6 + 1  # cdd, ts-guess, guided's six, min-k's one score at one k


def test_the_report_says_holm_is_applied_and_shows_it(tmp_path):
    from contam.harness.jobs.report import render
    from contam.harness.report.statistics.holm import SENTENCE

    md = render(probed_report(tmp_path), "md")
    assert SENTENCE in md and "The families count m1: 9 (cdd 1, ts-guess 1, guided 6, min-k 1);" in md
    assert md.count("| Holm p |") >= 5  # cdd, ts-guess, guided's two measures, min-k


# -- items 19 and 22: cdd's contrast rows and short answers -------------------------------------

CDD_PARAMS = {"samples": 20, "temperature": 0.8, "alpha": 0.05, "xi": 0.01}


def cdd_store(path: Path) -> tuple[Path, list[int]]:
    """m1 scored on canon items only; m2 on both, one cell unscored (NULL); compared lengths vary
    around 1/alpha = 20 tokens. Returns the path and the scored cells' lengths."""
    import json

    items = [(f"c{n}", "canon") for n in range(6)] + [(f"h{n}", "hack") for n in range(6)]
    store_of(path, items, [], [])
    cells = [(i, "m1") for i, s in items if s == "canon"] + [(i, "m2") for i, _ in items]
    rows, lengths = [], []
    for k, (item, model) in enumerate(cells):
        length, scored = 5 + 3 * k, (item, model) != ("h5", "m2")
        value = (k % 4) / 4 if scored else None
        flagged = None if value is None else float(value > CDD_PARAMS["xi"])
        lengths += [length] if scored else []
        for metric, v, detail in (("peakedness", value, {"max_length": length}), ("flagged", flagged, {})):
            rows.append({"run_id": "p", "probe": "cdd", "params_sha256": "c" * 64, "item_id": item,
                         "model": model, "metric": metric, "value": v, "detail": json.dumps(detail)})
    with Store(path) as store:
        store.append("probe_params", [{"params_sha256": "c" * 64, "probe": "cdd",
                                       "params": json.dumps(CDD_PARAMS)}])
        store.append("probe_scores", rows)
    return path, lengths


def test_a_model_without_a_scored_item_on_one_side_has_no_contrast_row(tmp_path):
    path, _ = cdd_store(tmp_path / "c.duckdb")
    with Store(path, read_only=True) as store:
        cdd = build_report(store, contrast=CONTRAST).probes["cdd"]
    assert [r["model"] for r in cdd["contrast"]] == ["m2"]  # m1: canon only, no Fisher p of 1
    assert {r["model"] for r in cdd["per_model"]} == {"m1", "m2"}  # its shares are still shown
    m2 = cdd["contrast"][0]
    assert (m2["documented_n"], m2["undocumented_n"]) == (6, 5)


def test_the_cdd_section_states_the_share_of_short_cells(tmp_path):
    from contam.harness.jobs.report import render

    path, lengths = cdd_store(tmp_path / "c.duckdb")
    with Store(path, read_only=True) as store:
        report = build_report(store, contrast=CONTRAST)
    short = sum(length < 20 for length in lengths)
    assert report.probes["cdd"]["short"] == {"tokens": 20, "n": len(lengths), "short": short,
                                                "share": pytest.approx(short / len(lengths))}
    md = render(report, "md")
    share = f"{100 * short / len(lengths):.1f}%"
    assert f"**Short answers**: {share} of the scored cells ({short} of {len(lengths)}) are under 20 tokens" in md
    assert f"probability {1 - 0.95 ** 20:.2f} at 20 samples" in md
    assert md.index("**Short answers**") < md.index("| Model | Items | Flagged |")  # beside the tables


# -- item 23: what the README says about the probes' sources ------------------------------------

def test_docs_claims_about_llmsanitize_guided_and_min_k_are_the_corrected_ones():
    readme = "\n".join(page.read_text("utf-8") for page in  # docs/how-to/probes.md, docs/explanation/probes.md
                       sorted((Path(__file__).resolve().parent.parent / "docs").rglob("*.md")))
    assert "sends `n` but no `temperature`" not in readme
    assert "its OpenAI helper sends `n` and `temperature`" in readme
    assert "the authors' *guided* instruction" not in readme
    assert "*guided* instruction of LLMSanitize's open-QA" in readme
    assert "both scores exact." not in readme and "exact to float32, about 2 × 10⁻⁵" in readme
