"""The report's probes section: the cdd part's numbers (flagged shares with Wilson intervals, mean
peakedness, Fisher's test documented vs undocumented) from a probed store, rendered in Markdown and
HTML with its figure; a store without probe scores leaves the section out with a note."""

from __future__ import annotations

import orjson
import pytest
from scipy import stats as sps

from contam.harness.report.analysis import build_report
from contam.harness.report.statistics.named_tests import wilson_interval
from contam.harness.store import Store
from tests.probekit import probe_two_profiles


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """A store probed with cdd on a contaminated and a clean emulated model (5 samples)."""
    return probe_two_profiles(tmp_path_factory.mktemp("probed"), [("cdd", {"samples": 5})])


def test_cdd_part_counts_shares_intervals_and_fisher(probed):
    with Store(probed, read_only=True) as store:
        part = build_report(store).probes["cdd"]
        truth = dict(((m, s), (n, f)) for m, s, n, f in store.query(
            "SELECT s.model, i.subset, count(*), sum(s.value)::INT FROM latest_probe_scores s "
            "JOIN latest_items i USING (item_id) WHERE s.metric = 'flagged' GROUP BY ALL"))
    assert part["params"]["samples"] == 5
    for row in part["per_subset"]:
        n, flagged = truth[(row["model"], row["subset"])]
        assert (row["n"], row["flagged"]) == (n, flagged)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(wilson_interval(flagged, n))
    dirty = next(r for r in part["contrast"] if r["model"] == "dirty")
    (dn, df), (un, uf) = truth[("dirty", "official")], truth[("dirty", "fan")]
    assert dirty["fisher_p"] == pytest.approx(sps.fisher_exact([[df, dn - df], [uf, un - uf]]).pvalue)
    assert dirty["documented_share"] >= 0.7 and dirty["undocumented_share"] == 0.0
    clean = next(r for r in part["contrast"] if r["model"] == "clean")
    assert clean["documented_flagged"] == clean["undocumented_flagged"] == 0
    means = {r["model"]: r["mean_peakedness"] for r in part["per_model"]}
    assert means["clean"] == 0.0 and means["dirty"] > 0.3  # fan items: 0


def test_report_files_hold_the_section_and_its_figure(probed, tmp_path, contam):
    """~10 s: the whole report folder, every figure as PNG and PDF, as `contam report` writes it."""
    status, _, err = contam("report", "--store", probed, "--out", tmp_path)
    assert status == 0, err
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "## Probe: cdd (output peakedness)" in md and "![Probe cdd:" in md
    assert (tmp_path / "fig_probe_cdd.png").stat().st_size > 10_000
    assert (tmp_path / "fig_probe_cdd.pdf").exists()
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'alt="fig_probe_cdd"' in html
    report = orjson.loads((tmp_path / "report.json").read_bytes())
    assert set(report["probes"]) == {"cdd"}


def test_a_store_without_probe_scores_has_no_probes_section_and_a_note(paper):
    assert paper.probes is None
    assert any(n.section == "probes" for n in paper.notes)
