"""`contam report` with ts-guess and guided scores: a store probed on a contaminated and a clean
emulated model (both knowing the demo items) gets both parts in report.json, report.md and
report.html, with their figures; the numbers are those of the stored scores."""

from __future__ import annotations

import orjson
import pytest
from scipy import stats as sps

from contam.harness.report.analysis import build_report
from contam.harness.store import Store
from tests.probekit import probe_two_profiles


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    return probe_two_profiles(tmp_path_factory.mktemp("probed"), [("ts-guess", {}), ("guided", {})],
                              clean_provider="anthropic")


def test_ts_guess_part_is_the_stored_matches(probed):
    with Store(probed, read_only=True) as store:
        part = build_report(store).probes["ts-guess"]
        truth = {(m, s): (n, k) for m, s, n, k in store.query(
            "SELECT s.model, i.subset, count(s.value), sum(s.value)::INT FROM latest_probe_scores s "
            "JOIN latest_items i USING (item_id) WHERE s.probe = 'ts-guess' GROUP BY ALL")}
    for row in part["rates"]:
        assert (row["n"], row["matches"]) == truth[(row["model"], row["subset"])]
    tests = {r["model"]: r for r in part["tests"]}
    (dn, dk), (un, uk) = truth[("dirty", "official")], truth[("dirty", "fan")]
    assert tests["dirty"]["fisher_p"] == pytest.approx(
        sps.fisher_exact([[dk, dn - dk], [uk, un - uk]]).pvalue)
    assert tests["dirty"]["documented_rate"] == 1.0 and tests["dirty"]["fisher_p"] < 0.01
    assert tests["clean"]["fisher_p"] > 0.05


def test_guided_part_separates_only_the_contaminated_models_documented_items(probed):
    with Store(probed, read_only=True) as store:
        part = build_report(store).probes["guided"]
    rows = {(r["model"], r["subset"], r["measure"]): r for r in part["differences"]}
    assert rows[("dirty", "official", "rouge_l")]["mean_difference"] > 0.5
    assert rows[("dirty", "official", "rouge_l")]["p"] < 0.001
    for key in (("dirty", "fan", "rouge_l"), ("clean", "official", "rouge_l"),
                ("clean", "fan", "bleu2")):
        assert rows[key]["p"] > 0.05 and abs(rows[key]["mean_difference"]) < 0.15


def test_report_files_hold_both_sections_and_figures(probed, tmp_path, contam):
    status, _, err = contam("report", "--store", probed, "--out", tmp_path)
    assert status == 0, err
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Probe: ts-guess (testset slot guessing)" in md and "![Probe ts-guess:" in md
    assert "## Probe: guided (guided vs general instruction)" in md and "![Probe guided:" in md
    for name in ("fig_probe_tsguess", "fig_probe_guided"):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
        assert (tmp_path / f"{name}.pdf").exists()
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'alt="fig_probe_tsguess"' in html and 'alt="fig_probe_guided"' in html
    report = orjson.loads((tmp_path / "report.json").read_bytes())
    assert set(report["probes"]) == {"ts-guess", "guided"}
    assert report["probes"]["guided"]["bootstrap"]["resamples"] == 4999
