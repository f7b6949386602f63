"""`contam probe min-k` end to end against emulated vLLM servers: a contaminated model separates
the documented items from the fan items (ROC-AUC well above 0.5), a clean one does not; retries,
resume; the report's min-k part and figure."""

from __future__ import annotations

import json

import pytest

from contam.harness.emulator.knowledge import Knowledge
from contam.harness.store import Store
from tests.runkit import write_items

N_ITEMS = 80  # 40 official, 40 fan


def _setup(tmp_path, emu, models=("vllm-a", "vllm-b")):
    items = write_items(tmp_path / "items.csv", N_ITEMS)
    lines = ['store = "store.duckdb"', 'items = "items.csv"']
    for name in models:
        lines += ["", "[[models]]", f'name = "{name}"', 'provider = "openai"',
                  f'model = "emu-{name}"', f'base_url = "{emu.base_url("openai")}"',
                  "concurrency = 8", "max_attempts = 4", "timeout_s = 5"]
    config = tmp_path / "probe.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(config), items


def _part(tmp_path):
    from contam.harness.report.parts.probe_mink import build

    with Store(tmp_path / "store.duckdb", read_only=True) as store:
        return build(store)


@pytest.fixture
def knowledge_of(tmp_path):
    def make(profile):
        return Knowledge.from_file(write_items(tmp_path / "items.csv", N_ITEMS), profile=profile,
                                   seed=11)
    return make


def test_a_contaminated_model_separates_the_subsets(tmp_path, emulator, keys, contam, knowledge_of):
    emu = emulator(knowledge=knowledge_of("contaminated"), seed=11)
    config, _ = _setup(tmp_path, emu)
    status, out, err = contam("probe", "min-k", config, "--no-progress")
    assert (status, err) == (0, "")
    assert "vllm-a: 80/80 texts scored" in out and "vllm-b: 80/80 texts scored" in out
    part = _part(tmp_path)
    assert [(r["model"], r["metric"]) for r in part["rows"]] == [("vllm-a", "min_k"),
                                                                 ("vllm-b", "min_k")]
    for row in part["rows"]:  # no min_k_pp from a server: its parameters say why
        assert (row["documented_n"], row["undocumented_n"]) == (40, 40)
        assert row["auc"] > 0.85 and row["auc_ci_low"] > 0.7 and row["mannwhitney_p"] < 1e-6
        assert row["logprobs"] == "prompt_logprobs"
    with Store(tmp_path / "store.duckdb", read_only=True) as store:
        [params] = store.query("SELECT params FROM probe_params")
    assert "Min-K%++ is not computed" in json.loads(params[0])["method"]


def test_a_clean_model_does_not(tmp_path, emulator, keys, contam, knowledge_of):
    emu = emulator(knowledge=knowledge_of("clean"), seed=11)
    config, _ = _setup(tmp_path, emu, models=("vllm-clean",))
    assert contam("probe", "min-k", config, "--no-progress")[0] == 0
    [row] = _part(tmp_path)["rows"]
    assert abs(row["auc"] - 0.5) < 0.15 and row["auc_ci_low"] < 0.5 < row["auc_ci_high"]
    assert row["mannwhitney_p"] > 0.05


def test_retries_and_resume_ask_each_text_until_it_is_scored_once(tmp_path, emulator, keys, contam,
                                                                   knowledge_of):
    emu = emulator(knowledge=knowledge_of("contaminated"), seed=11,
                   script=["500", "429:0", "reset"])
    config, _ = _setup(tmp_path, emu, models=("vllm-a",))
    assert contam("probe", "min-k", config, "--limit", "30", "--no-progress")[0] == 0
    status, out, _ = contam("probe", "min-k", config, "--no-progress")
    assert status == 0 and "vllm-a: 50/50 texts scored" in out
    asked = [r.body["prompt"] for r in emu.requests if r.path == "/v1/completions"]
    assert len(asked) == N_ITEMS + 3  # three scripted failures, each asked again
    assert len(set(asked)) == N_ITEMS
    with Store(tmp_path / "store.duckdb", read_only=True) as store:
        outcomes = dict(store.query("SELECT outcome, count(*) FROM attempts GROUP BY outcome"))
        scored = store.query("SELECT count(DISTINCT item_id) FROM probe_scores")[0][0]
    assert outcomes == {"ok": N_ITEMS, "transient": 2, "rate_limited": 1} and scored == N_ITEMS


def test_an_unknown_served_model_stops_before_anything_is_stored(tmp_path, emulator, keys, contam,
                                                                 knowledge_of):
    emu = emulator(knowledge=knowledge_of("contaminated"), served_model="someone-else")
    config, _ = _setup(tmp_path, emu, models=("vllm-a",))
    status, out, err = contam("probe", "min-k", config, "--no-progress")
    assert status == 1 and "STOPPED (substitution)" in out and "someone-else" in out
    with Store(tmp_path / "store.duckdb", read_only=True) as store:
        assert store.count("probe_scores") == store.count("probe_samples") == 0
