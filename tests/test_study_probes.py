"""The probes on a study of one's own, over real sockets to the emulator: cdd asks
the study's template, guided names ``[study] name``, ts-guess masks a word of ``{question}``, min-k
scores ``[probes] text``; each probe's recorded params carry what it used, and without these keys
the paper's params (and so their hashes and stored rows) are unchanged."""

from __future__ import annotations

import json

import pytest

from contam.harness.config import load_config
from contam.harness.jobs.probe import make_probe
from contam.harness.store import Store
from contam.harness.text import sha256_text
from contam.metrics.probe_mink import TEXT_RULE, probe_params
from contam.metrics.probe_tsguess import MASK
from contam.metrics.template import fill_template
from tests.probekit import generate_calls, probe_inprocess
from tests.ownitemskit import EXAMPLE, SYSTEM, TEMPLATE, example_config, import_example_items

ITEMS = [json.loads(line) for line in (EXAMPLE / "items.jsonl").read_text().splitlines()]


@pytest.fixture
def study(tmp_path, emulator, monkeypatch):
    monkeypatch.setenv("CONTAM_EMULATOR_KEY", "anything")
    emu = emulator()
    import_example_items(tmp_path / "s.duckdb")
    return emu, example_config(tmp_path, emu)


def _params(store_path):
    with Store(store_path, read_only=True) as store:
        return {probe: json.loads(params) for probe, params in
                store.query("SELECT probe, params FROM probe_params")}


def _user_texts(emu, start=0):
    texts = []
    for request in generate_calls(emu, start):
        body = request.body
        texts += [m["content"] for m in body.get("messages", []) if m["role"] == "user"]
    return texts


def test_cdd_asks_the_studys_own_template(tmp_path, study):
    emu, config = study
    run = probe_inprocess(config, tmp_path / "s.duckdb", "cdd", parameters={"samples": 2},
                          models=["gpt-emu"])
    assert run.status == 0, run.err
    expected = {fill_template(TEMPLATE, {"question": item["prompt"], "library": item["library"]})
                for item in ITEMS}
    assert set(_user_texts(emu)) == expected
    params = _params(tmp_path / "s.duckdb")["cdd"]
    assert (params["question_template"], params["system"]) == (TEMPLATE, SYSTEM)


def test_guided_names_the_study_and_a_dataset_flag_still_wins(tmp_path, study):
    emu, config = study
    assert probe_inprocess(config, tmp_path / "s.duckdb", "guided", models=["gpt-emu"]).status == 0
    assert _params(tmp_path / "s.duckdb")["guided"]["dataset"] == "LibQA"
    guided = [t for t in _user_texts(emu) if "the test split of the LibQA dataset" in t]
    assert len(guided) == len(ITEMS)
    built = make_probe("guided", load_config(config), {"dataset": "Other QA"})
    assert built.params()["dataset"] == "Other QA"


def test_ts_guess_masks_a_word_of_the_question_and_says_so(tmp_path, study):
    emu, config = study
    assert probe_inprocess(config, tmp_path / "s.duckdb", "ts-guess", models=["gpt-emu"]).status == 0
    assert _params(tmp_path / "s.duckdb")["ts-guess"]["masked_field"] == "question"
    masked = _user_texts(emu)
    assert masked and all(MASK in text for text in masked)
    questions = [item["prompt"] for item in ITEMS]
    for text in masked:  # the masked line is one of the questions with one word hidden
        line = next(line for line in text.splitlines() if MASK in line)
        before, after = line.split(MASK)
        assert any(q.startswith(before) and q.endswith(after) for q in questions)


def test_the_paper_probe_params_are_unchanged(tmp_path):
    """No [study] keys: the probes' params are today's, so their hashes and stored rows hold."""
    config = tmp_path / "paper.toml"
    config.write_text('[[models]]\nname = "m"\nprovider = "openai"\nmodel = "m"\n')
    paper = load_config(config)
    tsguess = make_probe("ts-guess", paper, {}).params()
    assert "masked_field" not in tsguess
    assert make_probe("guided", paper, {}).params()["dataset"] == "contam"
    cdd = make_probe("cdd", paper, {}).params()
    assert cdd["question_template"] == "Game: {title}\nQuestion: {question}"
    assert probe_params(0.2, "forward")["text"] == TEXT_RULE


def test_min_k_scores_the_studys_text_rule(tmp_path, study, contam):
    emu, config = study
    status, out, err = contam("probe", "min-k", config, "--models", "gpt-emu", "--no-progress")
    assert (status, err) == (0, ""), out
    rule = "{library}: {question}\n{reference}"
    params = _params(tmp_path / "s.duckdb")["min-k"]
    assert params["text"] == rule
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        hashes = dict(store.query("SELECT item_id, prompt_sha256 FROM probe_samples "
                                  "WHERE probe = 'min-k'"))
    assert hashes == {item["id"]: sha256_text(f"{item['library']}: {item['prompt']}\n"
                                              f"{item['answer']}") for item in ITEMS}


def test_an_unknown_field_in_the_text_rule_is_one_line(tmp_path, emulator, monkeypatch, contam):
    monkeypatch.setenv("CONTAM_EMULATOR_KEY", "anything")
    emu = emulator()
    import_example_items(tmp_path / "s.duckdb")
    config = example_config(tmp_path, emu, text='"{question}\\n{referance}"')
    status, out, err = contam("probe", "min-k", config, "--models", "gpt-emu", "--no-progress")
    assert status == 2 and err.count("\n") == 1
    assert err.strip() == (f"contam probe: {config}: [probes] text: field {{referance}} is not a "
                           "column of the items (columns: subset, question, library, pages, tags, "
                           "reference; did you mean {reference}?)")
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        assert (store.count("runs"), store.count("probe_samples")) == (0, 0)
