"""The report object: the seed paper's numbers from a store built to its counts, and missing data."""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pytest
from scipy import stats as sps

from contam.harness.errors import UserError
from contam.harness.report.analysis import build_report, parse_contrast
from contam.harness.store import Store, utc_now
from tests.paper_data import CLAUDE, GEMINI, GEMMA, GPT, JUDGE, MODELS

TABLE_6 = [[655, 112, 64], [2, 12, 18], [3, 23, 711]]


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def ci(row: dict, low: str = "ci_low", high: str = "ci_high") -> str:
    return f"[{100 * row[low]:.1f}, {100 * row[high]:.1f}]"


def by_model(rows: list[dict]) -> dict[str, dict]:
    return {r["model"]: r for r in rows}


# -- the paper's tables -------------------------------------------------------------------------

def test_table_2_overall(paper):
    got = [(r["model"], r["right"], r["partial"], r["wrong"], pct(r["accuracy"]), ci(r), pct(r["partial_credit"]))
           for r in paper.overall]
    assert got == [
        (GPT, 258, 9, 133, "64.5", "[59.7, 69.0]", "65.6"),
        (CLAUDE, 214, 6, 180, "53.5", "[48.6, 58.3]", "54.2"),
        (GEMINI, 214, 6, 180, "53.5", "[48.6, 58.3]", "54.2"),
        (GEMMA, 145, 11, 244, "36.2", "[31.7, 41.1]", "37.6"),
    ]
    assert all(r["n"] == 400 for r in paper.overall)


def test_table_3_per_title(paper):
    cells = {(r["model"], r["title"].split()[-1]): f"{pct(r['accuracy'])} {ci(r)}" for r in paper.per_title}
    assert cells[(GPT, "Red")] == "100.0 [96.3, 100.0]"
    assert cells[(GPT, "Brown")] == cells[(GPT, "Prism")] == "29.0 [21.0, 38.5]"
    assert [cells[(CLAUDE, t)] for t in ("Red", "Crystal", "Brown", "Prism")] == [
        "97.0 [91.5, 99.0]", "93.0 [86.3, 96.6]", "8.0 [4.1, 15.0]", "16.0 [10.1, 24.4]"]
    assert [cells[(GEMINI, t)] for t in ("Red", "Crystal", "Brown", "Prism")] == [
        "92.0 [85.0, 95.9]", "94.0 [87.5, 97.2]", "13.0 [7.8, 21.0]", "15.0 [9.3, 23.3]"]
    assert [cells[(GEMMA, t)] for t in ("Red", "Crystal", "Brown", "Prism")] == [
        "60.0 [50.2, 69.1]", "61.0 [51.2, 70.0]", "8.0 [4.1, 15.0]", "16.0 [10.1, 24.4]"]
    # documented titles first, in the order the items were added
    assert [r["title"] for r in paper.per_title[:4]] == [
        "Pokémon Red", "Pokémon Crystal", "Pokémon Brown", "Pokémon Prism"]


def test_table_4_gap_ordered_by_gap(paper):
    got = [(r["model"], pct(r["documented_accuracy"]), pct(r["undocumented_accuracy"]), pct(r["gap"]),
            r["odds_ratio"] if r["odds_ratio"] == "inf" else f"{r['odds_ratio']:.1f}", f"{r['fisher_p']:.1e}")
           for r in paper.gap]
    assert got == [
        (CLAUDE, "95.0", "12.0", "83.0", "139.3", "7.5e-72"),
        (GEMINI, "93.0", "14.0", "79.0", "81.6", "7.5e-64"),
        (GPT, "100.0", "29.0", "71.0", "inf", "6.0e-61"),
        (GEMMA, "60.5", "12.0", "48.5", "11.2", "6.5e-25"),
    ]
    assert all(r["documented_n"] == r["undocumented_n"] == 200 for r in paper.gap)


def test_gap_newcombe_interval_brackets_the_gap(paper):
    for r in paper.gap:
        assert r["gap_ci_low"] < r["gap"] < r["gap_ci_high"] <= 1
    claude = by_model(paper.gap)[CLAUDE]
    assert [round(claude["gap_ci_low"], 3), round(claude["gap_ci_high"], 3)] == [0.764, 0.874]


def test_table_5_judge_columns_and_rank_correlation(paper):
    assert (paper.human_rater, paper.judge_rater) == ("human", JUDGE)
    judge = by_model(paper.judge)
    assert [pct(judge[m]["accuracy"]) for m in MODELS] == ["53.2", "49.2", "37.0", "25.5"]
    assert [pct(judge[m]["partial_credit"]) for m in MODELS] == ["57.5", "53.0", "42.9", "30.0"]
    regimes = by_model(paper.regimes)
    assert [f"{regimes[m]['bleu2']:.3f}" for m in MODELS] == ["0.291", "0.157", "0.173", "0.140"]
    assert [f"{regimes[m]['bertscore_f1']:.3f}" for m in MODELS] == ["0.557", "0.330", "0.455", "0.440"]
    assert [f"{regimes[m]['mean_words']:.1f}" for m in MODELS] == ["7.5", "19.2", "4.2", "5.9"]
    rho = {k: round(v, 3) for k, v in paper.rank_correlation.items()}
    assert rho == {"judge": 0.949, "judge_partial_credit": 0.949, "bleu2": 0.949, "bertscore_f1": 0.632}


def test_table_6_agreement(paper):
    """The paper's 1,600 cells include Gemma's two blank answers (one unlabelled, one labelled wrong
    by both), wrong on both sides by the lower-bound rule whatever their labels: κ is over the 1,598
    answered cells both labelled, the two imputed ones stated apart (Table 6 counts both: 711)."""
    pooled = paper.agreement["pooled"]
    assert paper.agreement["imputed"] == 2
    assert pooled["confusion"] == [TABLE_6[0], TABLE_6[1], [3, 23, 709]] and pooled["n"] == 1598
    assert (round(pooled["exact"], 3), round(pooled["kappa"], 3), round(pooled["kappa_linear"], 3),
            round(pooled["kappa_binary"], 3)) == (0.861, 0.750, 0.820, 0.775)
    per_model = by_model(paper.agreement["per_model"])
    assert (pct(per_model[CLAUDE]["exact"]), round(per_model[CLAUDE]["kappa"], 3)) == ("92.2", 0.857)
    assert (pct(per_model[GEMINI]["exact"]), round(per_model[GEMINI]["kappa"], 3)) == ("81.2", 0.671)
    assert np.sum([r["confusion"] for r in per_model.values()], axis=0).tolist() == pooled["confusion"]


def test_mcnemar_claude_and_gemini_tie(paper):
    rows = {(r["model_a"], r["model_b"], r["scope"]): r for r in paper.mcnemar}
    tie = rows[(CLAUDE, GEMINI, "all")]
    assert tie["identical_labels"] == 332 and tie["a_only"] == tie["b_only"] and tie["p"] == 1.0
    assert rows[(GPT, GEMMA, "all")]["p"] < 1e-20
    assert len(paper.mcnemar) == 6 * 3  # every pair, on all items and on each subset
    fan = rows[(CLAUDE, GEMMA, "fan")]
    assert (fan["a_right"], fan["b_right"]) == (24, 24)


def test_empty_answers_are_wrong_and_counted(paper):
    missing = by_model(paper.missing)
    assert (missing[GEMMA]["answered"], missing[GEMMA]["empty"]) == (398, 2)
    assert missing[GPT]["empty"] == 0
    assert any(n.section == f"missing.{GEMMA}" and "2 empty" in n.reason for n in paper.notes)
    assert by_model(paper.answer_length)[GEMMA]["n"] == 398


# -- metric validity, recomputed independently from the cells view ---------------------------------

def cells_frame(path):
    with Store(path, read_only=True) as store:
        return store.con.execute(
            "SELECT model, subset, human_label, bleu2, bertscore_f1, answer_words FROM cells "
            "WHERE bleu2 IS NOT NULL").df()


def brute_auc(scores, positive):
    pos, neg = scores[positive], scores[~positive]
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return greater / (len(pos) * len(neg))


def test_metric_validity_recomputed(paper, paper_path):
    frame = cells_frame(paper_path)
    right = (frame["human_label"] == "right").to_numpy()
    bleu = frame["bleu2"].to_numpy()
    pooled = paper.metric_validity["bleu2"]["pooled"]
    assert pooled["n"] == 1598 and pooled["n_right"] == 831
    assert pooled["roc_auc"] == pytest.approx(brute_auc(bleu, right))
    assert pooled["zero_share_right"] == pytest.approx(np.mean(bleu[right] == 0))
    assert pooled["mean_right"] == pytest.approx(bleu[right].mean())
    assert pooled["length_r_right"] == pytest.approx(
        np.corrcoef(frame["answer_words"][right], bleu[right])[0, 1])
    gemini = by_model(paper.metric_validity["bleu2"]["per_model"])[GEMINI]
    assert pct(gemini["zero_share_right"]) == "43.0"  # §4.3: 43% of Gemini's right answers score 0
    official = frame[(frame["model"] == GPT) & (frame["subset"] == "official")]["bertscore_f1"].mean()
    fan = frame[(frame["model"] == GPT) & (frame["subset"] == "fan")]["bertscore_f1"].mean()
    gpt = by_model(paper.metric_validity["bertscore_f1"]["per_model"])[GPT]
    assert gpt["documented_ratio"] == pytest.approx(official / fan)


# -- small hand-made stores ---------------------------------------------------------------------

def make_store(path, items, answers=(), labels=(), scores=()):
    now = utc_now()
    with Store(path, create=True) as store:
        store.append("items", [{"item_id": i, "title": t, "subset": s, "question": "q?", "reference": "ref",
                                "added_at": now} for i, t, s in items])
        store.append("answers", [{"item_id": i, "model": m, "answer": a, "answer_raw": a, "created_at": now}
                                 for i, m, a in answers])
        store.append("labels", [{"item_id": i, "model": m, "rater": r, "label": lab, "created_at": now}
                                for i, m, r, lab in labels])
        store.append("scores", [{"item_id": i, "model": m, "metric": k, "value": v, "created_at": now}
                                for i, m, k, v in scores])
    return Store(path, read_only=True)


ITEMS = [("d1", "Doc A", "canon"), ("d2", "Doc A", "canon"), ("d3", "Doc B", "canon"),
         ("u1", "Hack A", "hack"), ("u2", "Hack A", "hack"), ("u3", "Hack B", "hack")]


def small_store(path, extra_labels=()):
    answers = [(i, m, f"answer {i} {m}") for (i, _, _), m in product(ITEMS, ("m1", "m2", "m3"))]
    right = {"m1": {"d1", "d2", "d3", "u1"}, "m2": {"d1", "d2"}, "m3": {"d1"}}
    labels = [(i, m, "human", "right" if i in right[m] else "wrong") for i, m, _ in answers]
    bleu = [(i, m, "bleu2", 0.5 if i in right[m] else 0.0) for i, m, _ in answers]
    return make_store(path, ITEMS, answers, labels + list(extra_labels), bleu)


def test_no_judge_and_no_bertscore_are_omitted_with_notes(store_path):
    with small_store(store_path) as store:
        report = build_report(store, contrast=("canon", "hack"))
    assert report.judge is None and report.agreement is None and report.judge_rater is None
    assert report.rank_correlation["judge"] is None and report.rank_correlation["bertscore_f1"] is None
    assert report.rank_correlation["bleu2"] == pytest.approx(1.0)
    assert report.metric_validity["bertscore_f1"] is None and report.metric_validity["bleu2"]
    sections = " ".join(n.section for n in report.notes)
    assert "judge" in sections and "metric_validity.bertscore_f1" in sections


def test_contrast_with_other_subset_names(store_path):
    with small_store(store_path) as store:
        report = build_report(store, contrast=("canon", "hack"))
        chosen = build_report(store)  # no pair of its own to choose: no contrast, and no error
        with pytest.raises(UserError, match="'official' has no items"):
            build_report(store, contrast=("official", "hack"))  # the user's own choice is checked
    assert chosen.contrast is None and chosen.gap is None and "`--contrast A,B`" in chosen.without_contrast
    assert report.contrast == {"documented": "canon", "undocumented": "hack"}
    m1 = by_model(report.gap)["m1"]
    assert (m1["documented_right"], m1["documented_n"], m1["undocumented_right"]) == (3, 3, 1)
    assert m1["gap"] == pytest.approx(2 / 3)
    assert [r["model"] for r in report.gap] == ["m1", "m2", "m3"]


def test_parse_contrast():
    assert parse_contrast(" canon , hack ") == ("canon", "hack")
    for bad in ("official", "a,b,c", "a,a", ",b"):
        with pytest.raises(UserError):
            parse_contrast(bad)


def test_missing_answers_and_labels(store_path):
    labels = [("d1", "m1", "human", "right"), ("d2", "m1", "human", "right"), ("u1", "m1", "human", "partial")]
    answers = [("d1", "m1", "x"), ("d2", "m1", "   "), ("d3", "m1", "an unlabelled answer"), ("u1", "m1", "")]
    with make_store(store_path, ITEMS, answers, labels) as store:
        report = build_report(store, contrast=("canon", "hack"))
    missing = report.missing[0]
    assert missing == {**missing, "items": 6, "answered": 2, "empty": 2, "no_answer": 2,
                       "unlabelled_human": 1, "empty_labelled_not_wrong": 2}
    overall = report.overall[0]
    # d1 right; d2 and u1 empty -> wrong despite their labels; u2, u3 never answered -> wrong;
    # d3 answered but unlabelled -> left out
    assert (overall["n"], overall["right"], overall["partial"], overall["wrong"]) == (5, 1, 0, 4)
    reasons = " ".join(n.reason for n in report.notes)
    assert "2 empty answer(s) counted as wrong" in reasons and "1 answer(s) without a human label" in reasons


def test_rater_selection_and_inter_annotator(store_path):
    answers = [(i, "m1", "a") for i, _, _ in ITEMS]
    alice = ["right", "right", "wrong", "partial", "wrong", "wrong"]
    bob = ["right", "partial", "wrong", "partial", "wrong", "right"]
    labels = [(i, "m1", "human:alice", a) for (i, _, _), a in zip(ITEMS, alice)]
    labels += [(i, "m1", "human:bob", b) for (i, _, _), b in zip(ITEMS, bob)]
    labels += [(i, "m1", "judge:small", "right") for i, _, _ in ITEMS[:2]]
    labels += [(i, "m1", "judge:big", "wrong") for i, _, _ in ITEMS]
    with make_store(store_path, ITEMS, answers, labels) as store:
        report = build_report(store, contrast=("canon", "hack"))
        chosen = build_report(store, contrast=("canon", "hack"), human="human:bob", judge="judge:small")
        with pytest.raises(UserError, match="no such rater"):
            build_report(store, contrast=("canon", "hack"), judge="judge:none")
    assert (report.human_rater, report.judge_rater) == ("human:alice", "judge:big")
    assert report.overall[0]["right"] == 2 and chosen.overall[0]["right"] == 2
    assert chosen.judge[0]["n"] == 2  # judge:small labelled two answers; the rest are left out
    assert {n.section for n in report.notes} >= {"human_rater", "judge_rater"}
    pair = report.inter_annotator["pairwise"][0]
    # confusion alice×bob: right→(1,1,0), partial→(0,1,0), wrong→(1,0,2); p_o = 4/6
    assert pair["confusion"] == [[1, 1, 0], [0, 1, 0], [1, 0, 2]] and pair["exact"] == pytest.approx(4 / 6)
    pe = (2 * 2 + 1 * 2 + 3 * 2) / 36
    assert pair["kappa"] == pytest.approx((4 / 6 - pe) / (1 - pe))
    assert report.inter_annotator["n_all_raters"] == 6
    assert not math.isnan(report.inter_annotator["fleiss_kappa"])


def test_the_adjudicators_labels_are_not_a_raters_in_inter_annotator_agreement(store_path):
    answers = [(i, "m1", "a") for i, _, _ in ITEMS]
    alice = ["right", "right", "wrong", "partial", "wrong", "wrong"]
    labels = [(i, "m1", "human:alice", a) for (i, _, _), a in zip(ITEMS, alice)]
    labels += [(i, "m1", "human:bob", "right") for i, _, _ in ITEMS]
    labels += [(i, "m1", "human:adjudicated", a) for (i, _, _), a in zip(ITEMS, alice)]
    with make_store(store_path, ITEMS, answers, labels) as store:
        inter = build_report(store, contrast=("canon", "hack")).inter_annotator
    assert inter["raters"] == ["human:alice", "human:bob"]
    assert [(p["rater_a"], p["rater_b"]) for p in inter["pairwise"]] == [("human:alice", "human:bob")]
    assert inter["n_all_raters"] == 6


def test_a_newer_label_replaces_the_old_one(store_path):
    with small_store(store_path, extra_labels=[("u2", "m1", "human", "right")]) as store:
        report = build_report(store, contrast=("canon", "hack"))
    assert by_model(report.overall)["m1"]["right"] == 5


def test_empty_store_is_a_user_error(store_path):
    Store(store_path, create=True).close()
    with Store(store_path, read_only=True) as store, pytest.raises(UserError, match="no items"):
        build_report(store)
    with make_store(store_path, ITEMS) as store, pytest.raises(UserError, match="no answers or labels"):
        build_report(store, contrast=("canon", "hack"))


def test_judge_rank_correlation_needs_three_models(store_path):
    answers = [(i, m, "a") for (i, _, _), m in product(ITEMS, ("m1", "m2"))]
    labels = [(i, m, r, "right") for i, m, _ in answers for r in ("human", "judge:j")]
    with make_store(store_path, ITEMS, answers, labels) as store:
        report = build_report(store, contrast=("canon", "hack"))
    assert report.rank_correlation["judge"] is None
    assert any("needs at least 3" in n.reason for n in report.notes)
    assert report.agreement["pooled"]["confusion"] == [[12, 0, 0], [0, 0, 0], [0, 0, 0]]


def test_without_human_labels_the_surface_metrics_remain(store_path):
    """The demo's case: answers and scores, no labels at all."""
    answers = [(i, m, "some answer") for (i, _, _), m in product(ITEMS, ("m2", "m1"))]
    scores = [(i, m, "bleu2", 0.3 if m == "m1" else 0.1) for i, m, _ in answers]
    with make_store(store_path, ITEMS, answers, (), scores) as store:
        report = build_report(store, contrast=("canon", "hack"))
    assert report.overall is None and report.gap is None and report.rank_correlation is None
    assert [(r["model"], r["bleu2"], r["human_accuracy"]) for r in report.regimes] == [
        ("m1", pytest.approx(0.3), None), ("m2", pytest.approx(0.1), None)]
    assert any(r["reason"].startswith("no human labels") for r in report.not_in_report)


# -- without human labels: surface metrics by subset, the judge's gap, the figures' regime ---------

# (model, metric) -> documented scores (d1, d2, d3), undocumented scores (u1, u2, u3)
SURFACE = {
    ("m1", "bleu2"): ((0.6, 0.4, 0.5), (0.1, 0.2, 0.3)),
    ("m2", "bleu2"): ((0.2, 0.2, 0.2), (0.1, 0.1, 0.1)),  # constant on both sides: no Welch test
    ("m1", "bertscore_f1"): ((0.3, 0.2, 0.1), (-0.1, -0.2, 0.0)),  # negative mean: no ratio
    ("m2", "bertscore_f1"): ((0.5, 0.6, 0.7), (0.1, 0.1, 0.4)),
}


def surface_store(path, labels=()):
    """Answers and scores only (the demo's case), unless ``labels`` are given."""
    answers = [(i, m, "some answer") for (i, _, _), m in product(ITEMS, ("m1", "m2"))]
    scores = [(i, m, metric, value) for (m, metric), (doc, undoc) in SURFACE.items()
              for (i, _, _), value in zip(ITEMS, doc + undoc)]
    return make_store(path, ITEMS, answers, labels, scores)


def test_surface_by_subset_needs_no_labels(store_path):
    with surface_store(store_path) as store:
        report = build_report(store, contrast=("canon", "hack"))
    assert report.overall is None and report.judge is None
    rows = {(r["model"], r["metric"]): r for m in ("bleu2", "bertscore_f1")
            for r in report.surface_by_subset[m]}
    for key, (doc, undoc) in SURFACE.items():
        row = rows[key]
        assert (row["documented_n"], row["undocumented_n"]) == (3, 3)
        assert row["documented_mean"] == pytest.approx(np.mean(doc))
        assert row["undocumented_mean"] == pytest.approx(np.mean(undoc))
        assert row["difference"] == pytest.approx(np.mean(doc) - np.mean(undoc))
        for side, scores in (("documented", doc), ("undocumented", undoc)):  # bootstrap: inside the range
            low, mean, high = (row[f"{side}_{k}"] for k in ("ci_low", "mean", "ci_high"))
            assert min(scores) - 1e-12 <= low <= mean <= high <= max(scores) + 1e-12
    m1 = rows[("m1", "bleu2")]
    assert m1["ratio"] == pytest.approx(2.5)
    # Welch by hand: equal n and variances 0.01 each -> t = 0.3 / sqrt(0.02/3), df = 4
    t = 0.3 / math.sqrt(0.02 / 3)
    assert m1["welch_p"] == pytest.approx(2 * sps.t.sf(t, 4))
    assert m1["difference_ci_low"] == pytest.approx(0.3 - 2.7764451051977987 * math.sqrt(0.02 / 3))
    assert math.isnan(rows[("m2", "bleu2")]["welch_p"]) and rows[("m2", "bleu2")]["ratio"] == pytest.approx(2)
    assert math.isnan(rows[("m1", "bertscore_f1")]["ratio"])  # -0.1 undocumented: a ratio means nothing
    assert rows[("m2", "bertscore_f1")]["ratio"] == pytest.approx(3.0)


def test_surface_means_per_title(store_path):
    with surface_store(store_path) as store:
        report = build_report(store, contrast=("canon", "hack"))
    per_title = report.surface_by_subset["per_title"]
    assert [(r["model"], r["title"], r["n"]) for r in per_title[:4]] == [
        ("m1", "Doc A", 2), ("m1", "Doc B", 1), ("m1", "Hack A", 2), ("m1", "Hack B", 1)]
    m1 = {r["title"]: r for r in per_title if r["model"] == "m1"}
    assert m1["Doc A"]["bleu2"] == pytest.approx(0.5) and m1["Hack A"]["bleu2"] == pytest.approx(0.15)
    assert m1["Hack B"]["bertscore_f1"] == pytest.approx(0.0) and m1["Doc A"]["bleu2_n"] == 2


def test_without_any_scores_surface_is_omitted_with_a_note(store_path):
    answers = [(i, "m1", "a") for i, _, _ in ITEMS]
    with make_store(store_path, ITEMS, answers) as store:
        report = build_report(store, contrast=("canon", "hack"))
    assert report.surface_by_subset is None
    assert {"surface_by_subset.bleu2", "surface_by_subset.bertscore_f1"} <= {n.section for n in report.notes}


def judge_only_labels():
    """m1 right on every canon item only; m2 right on d1, d2, u1; m3 right everywhere."""
    right = {"m1": {"d1", "d2", "d3"}, "m2": {"d1", "d2", "u1"}, "m3": {i for i, _, _ in ITEMS}}
    return [(i, m, "judge:j", "right" if i in right[m] else "wrong") for (i, _, _), m in product(ITEMS, right)]


def test_judge_gap_without_human_labels(store_path):
    labels = judge_only_labels()
    answers = [(i, m, "a") for i, m, _, _ in labels]
    with make_store(store_path, ITEMS, answers, labels) as store:
        report = build_report(store, contrast=("canon", "hack"))
    assert report.gap is None and report.judge_rater == "judge:j"
    assert [(r["model"], r["documented_right"], r["undocumented_right"]) for r in report.judge_gap] == [
        ("m1", 3, 0), ("m2", 2, 1), ("m3", 3, 3)]  # ordered by gap
    assert report.judge_gap[0]["fisher_p"] == pytest.approx(0.1)  # [[3, 0], [0, 3]]: 2 / C(6, 3)


def test_figure_regime_picks_the_best_available(store_path, tmp_path):
    from contam.harness.report.analysis import figure_regime

    with surface_store(store_path) as store:
        assert figure_regime(build_report(store, contrast=("canon", "hack"))) == "surface"
    with surface_store(tmp_path / "j.duckdb", judge_only_labels()[:12]) as store:
        assert figure_regime(build_report(store, contrast=("canon", "hack"))) == "judge"
    with small_store(tmp_path / "h.duckdb", judge_only_labels()) as store:
        assert figure_regime(build_report(store, contrast=("canon", "hack"))) == "human"
