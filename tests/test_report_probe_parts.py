"""The ts-guess and guided parts of the report's probes section, computed from probe_scores rows:
counts, Wilson intervals and Fisher's test for ts-guess; the paired bootstrap interval and the
sign-flip test for guided (checked by brute-force enumeration and scipy)."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from itertools import product

import numpy as np
import pandas as pd
import pytest
import scipy.stats as sps

from contam.harness.report.model import Report
from contam.harness.report.parts.probe_guided import BOOTSTRAP, guided_part, paired_difference
from contam.harness.report.parts.probe_tsguess import tsguess_part
from contam.harness.report.statistics.named_tests import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED

CONTRAST = ("official", "fan")


def tsguess_frame() -> pd.DataFrame:
    rows = [("A", f"o{i}", "official", 1.0 if i < 8 else 0.0) for i in range(10)]
    rows += [("A", f"f{i}", "fan", 1.0 if i < 1 else 0.0) for i in range(8)]
    rows += [("A", "f-lone", "fan", math.nan)]  # not probed: no eligible word
    rows += [("B", f"o{i}", "official", 0.0) for i in range(10)]
    return pd.DataFrame(rows, columns=["model", "item_id", "subset", "value"])


def test_tsguess_rates_per_model_and_subset_with_wilson_intervals() -> None:
    part = tsguess_part(tsguess_frame(), CONTRAST)
    rates = {(r["model"], r["subset"]): r for r in part["rates"]}
    official, fan = rates[("A", "official")], rates[("A", "fan")]
    assert (official["n"], official["matches"], official["rate"]) == (10, 8, 0.8)
    assert (fan["n"], fan["matches"], fan["not_probed"]) == (8, 1, 1)
    ci = sps.binomtest(8, 10).proportion_ci(method="wilson")
    assert (official["ci_low"], official["ci_high"]) == pytest.approx((ci.low, ci.high))
    assert [r["subset"] for r in part["rates"] if r["model"] == "A"] == ["official", "fan"]


def test_tsguess_fisher_documented_vs_undocumented() -> None:
    (test,) = tsguess_part(tsguess_frame(), CONTRAST)["tests"]  # B has no fan items: no test
    fisher = sps.fisher_exact([[8, 2], [1, 7]])
    assert test["model"] == "A" and test["difference"] == pytest.approx(0.8 - 1 / 8)
    assert test["fisher_p"] == pytest.approx(fisher.pvalue)
    assert test["odds_ratio"] == pytest.approx(fisher.statistic)
    assert test["ci_low"] < test["difference"] < test["ci_high"]


def guided_frame(shift: float, n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    rows = []
    for i in range(n):
        subset = "official" if i % 2 == 0 else "fan"
        general = rng.uniform(0, 0.5)
        guided = general + (shift if subset == "official" else 0.0) + rng.normal(0, 0.05)
        for measure in ("rouge_l", "bleu2"):
            rows += [("M", f"i{i}", subset, f"{measure}_guided", guided),
                     ("M", f"i{i}", subset, f"{measure}_general", general),
                     ("M", f"i{i}", subset, f"{measure}_diff", guided - general)]
    rows += [("M", "lone", "fan", f"{m}_{v}", math.nan) for m in ("rouge_l", "bleu2")
             for v in ("guided", "general", "diff")]
    return pd.DataFrame(rows, columns=["model", "item_id", "subset", "metric", "value"])


def test_guided_difference_per_scope_and_measure() -> None:
    part = guided_part(guided_frame(0.4), CONTRAST)
    rows = {(r["subset"], r["measure"]): r for r in part["differences"]}
    assert set(rows) == {(s, m) for s in ("all", "official", "fan") for m in ("rouge_l", "bleu2")}
    assert rows[("all", "rouge_l")]["n"] == 40 and rows[("fan", "rouge_l")]["n"] == 20  # NULLs out
    official, fan = rows[("official", "rouge_l")], rows[("fan", "rouge_l")]
    assert official["mean_difference"] == pytest.approx(
        official["guided_mean"] - official["general_mean"])
    assert official["ci_low"] > 0.3 and official["p"] < 0.001
    assert abs(fan["mean_difference"]) < 0.05 and fan["p"] > 0.05
    assert part["bootstrap"] == BOOTSTRAP and BOOTSTRAP["seed"] == BOOTSTRAP_SEED


def test_paired_bootstrap_is_seeded_and_is_scipys_bca_on_the_differences() -> None:
    rng = np.random.default_rng(9)
    guided, general = rng.uniform(0, 1, 50), rng.uniform(0, 1, 50)
    first, second = paired_difference(guided, general), paired_difference(guided, general)
    assert first == second
    bca = sps.bootstrap((guided - general,), np.mean, n_resamples=BOOTSTRAP_RESAMPLES, method="BCa",
                        rng=np.random.default_rng(BOOTSTRAP_SEED)).confidence_interval
    assert (first["ci_low"], first["ci_high"]) == pytest.approx((bca.low, bca.high))


def brute_force_sign_flip_p(d: list[Fraction]) -> float:
    """#{sign patterns whose sum is at least the observed one} / 2^n, in exact arithmetic."""
    observed = sum(d)
    hits = sum(sum(s * x for s, x in zip(signs, d)) >= observed for signs in product((1, -1), repeat=len(d)))
    return hits / 2 ** len(d)


def test_sign_flip_p_is_the_exact_enumeration_at_small_n() -> None:
    rng = np.random.default_rng(5)
    for n in (1, 2, 3, 5, 8, 12):
        for _ in range(3):
            d = [Fraction(int(k), 20) for k in rng.integers(-10, 15, n)]
            guided = np.array([float(x) for x in d]) + 0.25
            row = paired_difference(guided, np.full(n, 0.25))
            assert row["p_exact"] and row["p"] == pytest.approx(brute_force_sign_flip_p(d))


def test_sign_flip_p_matches_scipys_permutation_test() -> None:
    """scipy flips the signs of a one-sample statistic (permutation_type='samples'); exact when its
    resamples cover every pattern."""
    rng = np.random.default_rng(2)
    d = rng.normal(0.1, 0.3, 14)
    scipy_p = sps.permutation_test((d,), np.sum, permutation_type="samples", alternative="greater",
                                   n_resamples=np.inf).pvalue
    assert paired_difference(d + 1, np.ones(14))["p"] == pytest.approx(scipy_p, abs=1e-12)


def test_two_items_both_better_give_a_quarter_not_the_bootstrap_floor() -> None:
    row = paired_difference(np.array([0.9, 0.8]), np.array([0.1, 0.2]))
    assert row["p"] == 0.25 and row["small_n"]
    assert paired_difference(np.full(10, 0.9), np.full(10, 0.1))["p"] == 1 / 2 ** 10


def test_beyond_twenty_items_monte_carlo_agrees_with_the_normal_approximation() -> None:
    from contam.harness.report.statistics.signflip import RESAMPLES

    rng = np.random.default_rng(1)
    for shift in (0.0, 0.05, -0.1):
        guided = rng.uniform(0, 1, 300)
        general = guided - shift + rng.normal(0, 0.5, 300)
        d = guided - general
        row = paired_difference(guided, general)
        assert not row["p_exact"] and not row["small_n"] and row["p"] >= 1 / (1 + RESAMPLES)
        assert row["p"] == pytest.approx(sps.norm.sf(d.sum() / math.sqrt(np.sum(d ** 2))), abs=0.02)
    assert paired_difference(guided, general) == paired_difference(guided, general)  # seeded


def test_the_false_positive_rate_at_n_8_is_at_most_alpha() -> None:
    """Under a symmetric null the exact test rejects at most 5% of the time (the bootstrap: 8.5%)."""
    rng = np.random.default_rng(11)
    p = np.array([paired_difference(rng.normal(0, 1, 8), np.zeros(8))["p"] for _ in range(400)])
    assert np.mean(p < 0.05) <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 400)


def test_ties_with_the_observed_sum_count_whatever_the_rounding() -> None:
    """Differences on a coarse grid: many patterns sum exactly to the observed sum, and floating
    point alone would decide whether each counts. The p equals exact arithmetic's, in any order."""
    rng = np.random.default_rng(4)
    for _ in range(20):
        d = [Fraction(int(k), 10) for k in rng.integers(-3, 4, 12)]
        expected = brute_force_sign_flip_p(d)
        floats = np.array([float(x) for x in d])
        for order in (floats, floats[::-1], rng.permutation(floats)):
            assert paired_difference(order + 0.3, np.full(12, 0.3))["p"] == pytest.approx(expected)


def test_bootstrap_edge_cases() -> None:
    same = paired_difference(np.full(10, 0.5), np.full(10, 0.5))
    assert (same["mean_difference"], same["ci_low"], same["ci_high"], same["p"]) == (0, 0, 0, 1.0)
    one = paired_difference(np.array([0.4]), np.array([0.1]))
    assert one["n"] == 1 and one["p"] == 0.5 and math.isnan(one["ci_low"]) and one["small_n"]
    none = paired_difference(np.array([]), np.array([]))
    assert math.isnan(none["p"]) and not none["small_n"]


def report_of(tsguess: dict, guided: dict) -> Report:
    return Report(contrast={"documented": "official", "undocumented": "fan"},
                  probes={"ts-guess": tsguess, "guided": guided})


def params_info(**params) -> dict:
    return {"params_sha256": "ab" * 32, "params": params, "other_params": []}


def test_sections_state_the_rule_the_tests_and_the_bootstrap() -> None:
    from contam.harness.report.parts import probe_guided
    from contam.harness.report.parts import probe_tsguess

    tsguess = {**params_info(rule="rarest"), **tsguess_part(tsguess_frame(), CONTRAST)}
    guided = {**params_info(dataset="PokeQA", split="test"), **guided_part(guided_frame(0.4), CONTRAST)}
    report = report_of(tsguess, guided)
    ts = probe_tsguess.section(tsguess, report)
    assert "rule rarest" in ts.paragraphs[0] and "Wilson" in ts.paragraphs[0]
    assert [len(t.rows) for t in ts.tables] == [3, 1]  # A official, A fan, B official; one test
    assert ts.tables[1].rows[0][1] == "80.0% (8/10)" and ts.tables[1].rows[0][3] == "+67.5 pp"
    gd = probe_guided.section(guided, report)
    text = " ".join(gd.paragraphs)
    assert f"{BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED}" in text
    assert "one-sided paired sign-flip" in text and "PokeQA" in text and "exact" in text
    assert [len(t.rows) for t in gd.tables] == [3, 3]  # all, official, fan per measure


def test_figures_draw_each_subsets_value() -> None:
    from contam.harness.report.plots import probe_bars

    tsguess = {**params_info(rule="rarest"), **tsguess_part(tsguess_frame(), CONTRAST)}
    guided = {**params_info(dataset="d", split="s"), **guided_part(guided_frame(0.4), CONTRAST)}
    report = report_of(tsguess, guided)
    (ax,) = probe_bars.exact_match_rates(report).axes
    heights = sorted(round(bar.get_height(), 6) for bar in ax.patches)
    assert heights == [0.0, 0.0, 12.5, 80.0]  # B has no fan bar (0), B official 0 %, A fan 1/8
    figure = probe_bars.guided_differences(report)
    assert [ax.get_title() for ax in figure.axes] == ["ROUGE-L", "BLEU-2"]
    official = next(r for r in guided["differences"]
                    if r["subset"] == "official" and r["measure"] == "rouge_l")
    assert round(official["mean_difference"], 6) in {round(b.get_height(), 6)
                                                      for b in figure.axes[0].patches}


def probed_store(path) -> None:
    """cdd (5 official, 4 fan items, model M) and min-k scores (model M, k 0.2)."""
    import orjson

    from contam.harness.store import Store, utc_now
    from contam.metrics.probe_mink import probe_params
    from contam.metrics.probes import params_sha256

    items = [(f"o{i}", "official") for i in range(5)] + [(f"f{i}", "fan") for i in range(4)]
    cdd = {"samples": 5, "temperature": 0.8, "alpha": 0.05, "xi": 0.01}
    sets = {"cdd": (params_sha256("cdd", cdd), cdd),
            "min-k": (params_sha256("min-k", probe_params(0.2, "forward")), probe_params(0.2, "forward"))}
    scores = [("cdd", item, metric, value) for n, (item, subset) in enumerate(items)
              for metric, value in (("peakedness", n / 10), ("flagged", float(subset == "official" and n < 4)))]
    scores += [("min-k", item, "min_k", -n / 3) for n, (item, _) in enumerate(items)]
    with Store(path, create=True) as store, store.transaction():
        store.append("items", [{"item_id": i, "title": "T", "subset": s, "question": "Q?", "reference": "R"}
                               for i, s in items])
        store.append("probe_params", [{"params_sha256": sha, "probe": kind, "params": orjson.dumps(p).decode()}
                                      for kind, (sha, p) in sets.items()])
        store.append("probe_scores", [
            {"probe": kind, "params_sha256": sets[kind][0], "item_id": item, "model": "M", "metric": metric,
             "value": value, "created_at": utc_now()} for kind, item, metric, value in scores])


def test_probe_tables_are_named_and_their_csvs_are_tidy_numbers(tmp_path) -> None:
    from contam.harness.report.parts import probes
    from contam.harness.report.writers.tables import write_tables
    from contam.harness.store import Store

    probed_store(tmp_path / "s.duckdb")
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        parts = probes.build(store, CONTRAST, [])
    parts["ts-guess"] = {**params_info(rule="rarest"), **tsguess_part(tsguess_frame(), CONTRAST)}
    parts["guided"] = {**params_info(dataset="d", split="s"), **guided_part(guided_frame(0.4), CONTRAST)}
    report = dataclasses.replace(report_of(parts["ts-guess"], parts["guided"]), probes=parts)
    write_tables(report, probes.sections(report), tmp_path / "tables")
    names = {"probe_cdd_by_model", "probe_cdd_by_model_subset", "probe_cdd_contrast",
             "probe_tsguess_by_model_subset", "probe_tsguess_contrast", "probe_guided_rouge_l",
             "probe_guided_bleu2", "probe_min_k"}
    index = pd.read_csv(tmp_path / "tables" / "index.csv").set_index("name")
    assert names <= set(index.index) and index.loc[sorted(names), "tidy"].all()
    labels = {"model", "subset", "metric", "logprobs", "params_sha256"}
    for name in names:
        frame = pd.read_csv(tmp_path / "tables" / f"{name}.csv")
        assert len(frame) and all(pd.api.types.is_numeric_dtype(frame[column])
                                  for column in set(frame.columns) - labels), name
    (tsguess,) = pd.read_csv(tmp_path / "tables" / "probe_tsguess_contrast.csv").to_dict("records")
    assert tsguess["difference"] == pytest.approx(0.8 - 1 / 8) and tsguess["documented_matches"] == 8
    (cdd,) = pd.read_csv(tmp_path / "tables" / "probe_cdd_contrast.csv").to_dict("records")
    assert (cdd["documented_share"], cdd["undocumented_share"], cdd["odds_ratio"]) == (0.8, 0.0, math.inf)
    (min_k,) = pd.read_csv(tmp_path / "tables" / "probe_min_k.csv").to_dict("records")
    assert (min_k["k"], min_k["auc"]) == (0.2, 1.0) and "documented_values" not in min_k
