"""`contam demo --probes`: every registered probe on a contaminated and a clean emulated model
that know the demo items, into the demo's store; the contaminated model's documented items stand
out, the clean model's do not."""

from __future__ import annotations

import pytest

from contam.harness.cli import build_parser
from contam.harness.jobs.demo import demo_items_path
from contam.harness.jobs.demo_probes import EMULATED_MODELS, MIN_K_CLEAN, demo_probes
from contam.harness.jobs.importing import import_file
from contam.harness.prompts import DEFAULT_SYSTEM_PROMPT
from contam.harness.report.analysis import build_report
from contam.harness.store import Store
from contam.metrics.probe_registry import PROBES


def test_demo_probes_runs_every_probe_on_both_emulated_models_and_feeds_the_report(store, capsys):
    import_file(store, "items", demo_items_path())
    assert demo_probes(store, demo_items_path(), DEFAULT_SYSTEM_PROMPT, no_progress=True) == 0
    probed = {(probe, model) for probe, model in store.query(
        "SELECT DISTINCT probe, model FROM latest_probe_scores")}
    # min-k, on log-probabilities, runs where the protocol gives them (not Gemini's) and on its own
    # clean model; every other probe on both emulated models
    assert probed == {(kind, model) for kind in PROBES if kind != "min-k"
                      for model in EMULATED_MODELS} | {
        ("min-k", "emulated-contaminated"), ("min-k", MIN_K_CLEAN)}
    shares = dict(((m, s), v) for m, s, v in store.query(
        "SELECT s.model, i.subset, avg(s.value) FROM latest_probe_scores s JOIN latest_items i "
        "USING (item_id) WHERE s.probe = 'cdd' AND s.metric = 'flagged' GROUP BY ALL"))
    assert shares[("emulated-contaminated", "official")] >= 0.7
    assert shares[("emulated-contaminated", "fan")] == shares[("emulated-clean", "official")] == 0.0
    out = capsys.readouterr().out
    assert "probe scores per model and subset" in out and "emulated-clean" in out
    assert "demo-emulator" not in store.query("SELECT string_agg(config, ' ') FROM runs")[0][0]
    report = build_report(store)  # the probes section, before any answer of the demo's model
    models = {r["model"] for r in report.probes["cdd"]["per_model"]}
    assert models == set(EMULATED_MODELS)
    # min-k: the contaminated model's documented items are likelier; the clean model's 18 texts
    # are noise (tests/test_probe_mink_emulated.py shows AUC about 0.5 on 80 items).
    auc = {r["model"]: r["auc"] for r in report.probes["min-k"]["rows"]}
    assert auc["emulated-contaminated"] > 0.8 > auc[MIN_K_CLEAN]


def test_the_demo_takes_probes():
    assert build_parser().parse_args(["demo", "--probes"]).probes is True


@pytest.mark.slow
def test_contam_demo_probes_end_to_end(tmp_path, contam):
    out = tmp_path / "demo"
    status, stdout, err = contam("demo", "--out", out, "--no-progress", "--probes")
    assert status == 0, err
    assert "probe cdd" in stdout
    assert (out / "fig_probe_cdd.png").stat().st_size > 0
    assert "## Probe: cdd" in (out / "report.md").read_text(encoding="utf-8")
    with Store(out / "contam.duckdb", read_only=True) as opened:
        assert opened.count("answers") == 18  # the local model's, as without --probes
