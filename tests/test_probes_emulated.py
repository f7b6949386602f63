"""`contam probe ts-guess` and `contam probe guided` end to end: real sockets to an emulator that
knows the items (contaminated or clean), a real DuckDB store, and the report parts computed from
what was stored. Contaminated separates the documented from the undocumented subset; clean
does not."""

from __future__ import annotations

import csv
from pathlib import Path

import duckdb
import orjson
import pytest

from contam.harness.emulator.knowledge import Knowledge
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.report.parts import probe_guided
from contam.harness.report.parts import probe_tsguess
from contam.harness.store import Store
from contam.metrics.probe_tsguess import NO_ELIGIBLE_WORD, RULE

CONTRAST = ("official", "fan")
WORDS = ["lantern", "harbour", "quartz", "meadow", "falcon", "cobalt", "saddle", "ember"]


def write_items(path: Path, n: int = 60) -> Path:
    """Questions that name their item twice (realm<k>, king<k>), so a masked question or its
    first half still says which item it is; even items documented, odd ones not."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "title", "subset", "question", "reference"])
        for k in range(n):
            writer.writerow([f"i{k:03d}", f"Game {k % 5}", "official" if k % 2 == 0 else "fan",
                             f"In realm{k} which {WORDS[k % 8]} guards the {WORDS[(k // 8) % 8]} "
                             f"tower of king{k}?", f"Keeper {k}"])
        writer.writerow(["lone", "It", "fan", "Was it in 1996?", "Yes"])  # nothing to mask
    return path


def write_config(folder: Path, emu, items: Path) -> Path:
    lines = [f'items = "{items.as_posix()}"']
    for name, provider, key in (("gpt-emu", "openai", "OPENAI_API_KEY"),
                                ("claude-emu", "anthropic", "ANTHROPIC_API_KEY")):
        lines += ["[[models]]", f'name = "{name}"', f'provider = "{provider}"',
                  f'model = "{name}-1"', f'base_url = "{emu.base_url(provider)}"',
                  f'api_key_env = "{key}"', "concurrency = 8"]
    path = folder / "probe.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def probed(tmp_path: Path, contam, profile: str, kind: str, *flags: str) -> Path:
    items = write_items(tmp_path / "items.csv")
    store = tmp_path / "probe.duckdb"
    knowledge = Knowledge.from_file(items, profile=profile, seed=3)
    with run_emulator(EmulatorSettings(knowledge=knowledge)) as emu:
        config = write_config(tmp_path, emu, items)
        status, out, err = contam("probe", kind, config, "--store", store, "--no-progress", *flags)
    assert status == 0, err
    assert "122 cells scored" in out, out
    return store


@pytest.mark.parametrize("profile", ["contaminated", "clean"])
def test_ts_guess_separates_the_subsets_only_when_contaminated(tmp_path, contam, keys, profile) -> None:
    store = probed(tmp_path, contam, profile, "ts-guess")
    with Store(store, create=True) as opened:
        part = probe_tsguess.build(opened, CONTRAST)
    params = part["params"]
    with duckdb.connect(str(store), read_only=True) as con:
        detail = orjson.loads(con.execute(
            "SELECT detail FROM latest_probe_scores WHERE item_id = 'i000' AND model = 'gpt-emu'"
        ).fetchone()[0])
        lone = con.execute("SELECT value, detail::VARCHAR FROM latest_probe_scores "
                           "WHERE item_id = 'lone'").fetchall()
        asked = con.execute("SELECT count(*) FROM probe_samples WHERE item_id = 'lone'").fetchone()[0]
    assert asked == 0  # never guessed
    assert params["rule"] == RULE and detail["rule"] == RULE
    assert detail["word"] == "realm0" and detail["zipf"] == 0.0  # rarest, the first of two 0s
    assert lone == [(None, orjson.dumps({"rule": RULE, "reason": NO_ELIGIBLE_WORD}).decode())] * 2
    assert {r["not_probed"] for r in part["rates"] if r["subset"] == "fan"} == {1}
    assert len(part["tests"]) == 2
    for test in part["tests"]:
        assert test["documented_n"] == test["undocumented_n"] == 30
        if profile == "contaminated":
            assert test["documented_rate"] >= 0.8 and test["undocumented_rate"] <= 0.25
            assert test["fisher_p"] < 1e-6
        else:
            assert test["documented_rate"] <= 0.25 and test["undocumented_rate"] <= 0.25
            assert test["fisher_p"] > 0.05


@pytest.mark.parametrize("profile", ["contaminated", "clean"])
def test_guided_beats_general_on_documented_items_only_when_contaminated(tmp_path, contam, keys,
                                                                         profile) -> None:
    store = probed(tmp_path, contam, profile, "guided", "--dataset", "Keepers QA")
    with Store(store, create=True) as opened:
        part = probe_guided.build(opened, CONTRAST)
    params = part["params"]
    with duckdb.connect(str(store), read_only=True) as con:
        asked = con.execute("SELECT count(*) FROM latest_probe_samples WHERE probe = 'guided'"
                            ).fetchone()[0]
    assert params["dataset"] == "Keepers QA" and asked == 244  # "Was it in 1996?" is split too
    rows = {(r["model"], r["subset"], r["measure"]): r for r in part["differences"]}
    for model in ("gpt-emu", "claude-emu"):
        for measure in ("rouge_l", "bleu2"):
            documented, undocumented = rows[(model, "official", measure)], rows[(model, "fan", measure)]
            assert (documented["n"], undocumented["n"]) == (30, 31)
            assert abs(undocumented["mean_difference"]) < 0.15 and undocumented["p"] > 0.01
            if profile == "contaminated":
                # a memorised item's rest comes back whole (1.0); a generic completion is another
                # question's second half, which shares "the ... tower of ..." with it
                assert documented["guided_mean"] > 0.85 and documented["general_mean"] < 0.7
                assert documented["ci_low"] > 0.2 and documented["p"] < 0.001
            else:
                assert abs(documented["mean_difference"]) < 0.15 and documented["p"] > 0.01
