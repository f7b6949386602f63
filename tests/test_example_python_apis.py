"""The second worked study, examples/python-apis: its items file is what the
study needs (60+ distinct items, three ordered tiers, a numeric exposure column, ISO dates) and
imports cleanly with its extra columns kept; `contam emulator --items ... --exposure log10_pages`
answers popular items more often than obscure ones, for each of the study's models.
(The study.toml's [study]/[scoring]/cutoff keys load with the study config; the
end-to-end run is the coordinator's test.)"""

from __future__ import annotations

import csv
import datetime
import json
import tomllib
from pathlib import Path

import duckdb
import httpx

from contam.harness.cli import build_parser, emulator_settings_from_args
from contam.harness.emulator.knowledge import Knowledge
from contam.harness.emulator.server import run_emulator

STUDY = Path(__file__).resolve().parent.parent / "examples" / "python-apis"
TIERS = ("popular", "niche", "obscure")


def rows() -> list[dict[str, str]]:
    with (STUDY / "items.csv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def config() -> dict:
    return tomllib.loads((STUDY / "study.toml").read_text(encoding="utf-8"))


def test_the_items_are_many_distinct_tiered_dated_and_exposed() -> None:
    items, study = rows(), config()["study"]
    assert len(items) >= 60
    for column in ("item_id", "question"):
        assert len({row[column] for row in items}) == len(items), column
    assert tuple(study["subsets"]) == TIERS
    assert {row["subset"] for row in items} == set(TIERS)
    exposure = {tier: [float(r[study["exposure"]]) for r in items if r["subset"] == tier]
                for tier in TIERS}
    assert all(len(values) >= 20 for values in exposure.values())
    means = [sum(v) / len(v) for v in exposure.values()]
    assert means == sorted(means, reverse=True)  # the tiers are in order of exposure
    dates = [datetime.date.fromisoformat(row[study["released"]]) for row in items]
    assert min(dates) < datetime.date(2021, 1, 1) < max(dates)  # some before, some after cut-offs
    assert all(row["reference"].strip() and row["title"].strip() for row in items)


def test_the_items_file_imports_with_its_extra_columns(tmp_path, contam) -> None:
    store = tmp_path / "study.duckdb"
    status, out, err = contam("import", "items", STUDY / "items.csv", "--store", store)
    assert status == 0, err
    with duckdb.connect(str(store), read_only=True) as con:
        stored = con.execute("SELECT item_id, subset, extra FROM items").fetchall()
    assert len(stored) == len(rows())
    by_id = {row["item_id"]: row for row in rows()}
    for item_id, subset, extra in stored:
        fields = json.loads(extra)
        assert subset == by_id[item_id]["subset"]
        assert (fields["log10_pages"], fields["added"]) == (by_id[item_id]["log10_pages"],
                                                           by_id[item_id]["added"])


def _ask(client: httpx.Client, model: str, system: str, user: str) -> str:
    body = {"model": model, "messages": [{"role": "system", "content": system},
                                         {"role": "user", "content": user}]}
    reply = client.post("/v1/chat/completions", json=body).json()
    return reply["choices"][0]["message"]["content"]


def test_the_exposure_emulator_knows_popular_apis_better_than_obscure_ones() -> None:
    study = config()
    args = build_parser().parse_args(["emulator", "--items", str(STUDY / "items.csv"),
                                      "--exposure", study["study"]["exposure"]])
    prompt = study["prompt"]
    exact: dict[str, dict[str, list[bool]]] = {}
    with run_emulator(emulator_settings_from_args(args)) as emu, \
            httpx.Client(base_url=emu.url, timeout=5) as client:
        for model in (entry["model"] for entry in study["models"]):
            for row in rows():
                user = prompt["user"].format(title=row["title"], question=row["question"])
                answer = _ask(client, model, prompt["system"], user)
                hit = answer.rstrip(".").casefold() == row["reference"].casefold()
                exact.setdefault(model, {}).setdefault(row["subset"], []).append(hit)
    share = {model: {tier: sum(h) / len(h) for tier, h in tiers.items()}
             for model, tiers in exact.items()}
    assert len(share) == 4
    for model, tiers in share.items():
        assert tiers["popular"] > tiers["obscure"] + 0.1, (model, tiers)
    pooled = {tier: sum(s[tier] for s in share.values()) / 4 for tier in TIERS}
    assert pooled["popular"] > pooled["niche"] > pooled["obscure"], pooled
    assert pooled["popular"] > pooled["obscure"] + 0.3, pooled


def test_the_docs_table_is_what_the_emulator_answers() -> None:
    """The docs' (docs/tutorials/python-apis.md) per-tier exact shares of the second study are the emulator's answers (the
    answer depends on the item, the seed and the model's name, not on the prompt's wording)."""
    readme = (STUDY.parent.parent / "docs" / "tutorials" / "python-apis.md").read_text(encoding="utf-8")
    section = readme.split("### A second worked study", 1)[1].split("\n## ", 1)[0]
    table = {cells[0]: [float(c) for c in cells[1:]] for cells in
             ([c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
              if line.startswith("| ") and "-emu" in line)}
    study = config()
    knowledge = Knowledge.from_file(STUDY / "items.csv", exposure=study["study"]["exposure"])
    by_id = {row["item_id"]: row for row in rows()}
    measured = {}
    for entry in study["models"]:
        hits: dict[str, list[bool]] = {tier: [] for tier in TIERS}
        for item in knowledge.items:
            user = study["prompt"]["user"].format(title=item.title, question=item.question)
            answer = knowledge.answer(study["prompt"]["system"], user, model=entry["model"])
            hits[by_id[item.item_id]["subset"]].append(answer == f"{item.reference}.")
        measured[entry["name"]] = [round(sum(h) / len(h), 2) for h in hits.values()]
    assert table == measured
