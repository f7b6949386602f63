"""The report's provenance section, filled from a real `contam run` against the loopback emulator."""

from __future__ import annotations

import orjson
import pytest

from contam.harness.store import Store
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from tests.runkit import KEYS, model_entry, run_inprocess, write_config


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    """Two models over 6 items (the emulator's first reply is a 500, so one retry), BLEU-2 scored."""
    from contam.harness.cli import main

    folder = tmp_path_factory.mktemp("prov")
    store = folder / "s.duckdb"
    with pytest.MonkeyPatch.context() as patch:
        for name, value in KEYS.items():
            patch.setenv(name, value)
        with run_emulator(EmulatorSettings(script=["500"])) as emu:
            entries = [model_entry("openai", emu, concurrency=1, params={"temperature": 0.0}),
                       model_entry("anthropic", emu, params={"max_tokens": 64})]
            config = write_config(folder, entries, items=6)
            result = run_inprocess(config, store)
    assert result.status == 0, result.err
    assert main(["score", "--store", str(store), "--metric", "bleu2", "--no-progress"]) == 0
    return store, folder


def test_provenance_from_an_emulator_run(emulated, contam):
    store, folder = emulated
    status, _, err = contam("report", "--store", store, "--out", folder / "r")
    assert status == 0, err
    report = orjson.loads((folder / "r" / "report.json").read_bytes())
    prov = report["provenance"]
    with Store(store, read_only=True) as s:
        run_id, prompt = s.query("SELECT run_id, prompt_sha256 FROM runs LIMIT 1")[0]
        served = dict(s.query("SELECT model, any_value(served_model) FROM answers GROUP BY model"))
    [run] = prov["runs"]
    assert run["run_id"] == run_id and run["kind"] == "run" and run["sha256"] == prompt
    assert run["started_at"] <= run["finished_at"] and len(run["config_sha256"]) == 64
    models = {m["model"]: m for m in prov["models"]}
    assert set(models) == {"openai-m", "anthropic-m"}
    openai = models["openai-m"]
    assert openai["provider"] == "openai" and openai["requested"] == ["emu-openai"]
    assert openai["served"] == [{"id": served["openai-m"], "answers": 6}]
    assert openai["sampling"] == [{"temperature": 0.0}]
    assert all(m["attempts"]["ok"] == 6 for m in models.values())
    # The scripted 500 goes to whichever model asks first: exactly one of them shows the retry.
    retried = [m for m in models.values() if m["attempts"]["retries"] >= 1]
    assert len(retried) == 1 and retried[0]["attempts"]["failures"].get("transient", 0) == 1
    assert models["anthropic-m"]["sampling"] == [{"max_tokens": 64}]
    assert prov["store"] == str(store) and "contam_version" in prov
    [bleu] = prov["scoring"]
    assert bleu["metric"] == "bleu2" and bleu["scores"] == 12
    assert bleu["params"]["implementation"] == "contam.metrics.bleu" and bleu["params"]["max_n"] == 2


def test_provenance_in_markdown_and_html(emulated, contam):
    store, folder = emulated
    status, md, _ = contam("report", "--store", store, "--format", "md")
    assert status == 0
    with Store(store, read_only=True) as s:
        run_id, prompt = s.query("SELECT run_id, prompt_sha256 FROM runs LIMIT 1")[0]
    section = md[md.index("## Provenance"):]
    assert run_id in section and prompt in section and "emu-openai" in section
    assert "temperature=0.0" in section and "implementation=contam.metrics.bleu" in section
    status, page, _ = contam("report", "--store", store, "--format", "html")
    assert status == 0 and "<h2>Provenance</h2>" in page and prompt in page
    for key in KEYS.values():
        assert key not in md and key not in page
