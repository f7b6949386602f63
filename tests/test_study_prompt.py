"""A study's own question template: ``[prompt] user`` filled from the item's own
columns, extras included; ``{{``/``}}`` literal; bad fields refused in one line before anything is
asked; the system prompt and the template hashed into ``runs.prompt_sha256``; and without it, the
paper's bytes and the paper's hash."""

from __future__ import annotations

import pytest

from contam.harness.emulator.knowledge import Knowledge
from contam.harness.errors import UserError
from contam.harness.prompts import (
    DEFAULT_SYSTEM_PROMPT, USER_TEMPLATE, QuestionPrompt, prompt_sha256, question_request,
    study_prompt,
)
from contam.harness.store import Store
from contam.harness.text import sha256_text
from tests.runkit import Recorder, model_entry, run_inprocess, write_config
from tests.ownitemskit import EXAMPLE, SYSTEM, TEMPLATE, example_config, import_example_items

# The seed paper's prompt hash: sha256(DEFAULT_SYSTEM_PROMPT + "\0" + "Game: {title}\nQuestion:
# {question}"), computed on main before study templates existed (commit b8bfcd3). It must never
# change: every stored paper run carries it.
PAPER_PROMPT_SHA256 = "87621b9e224f108457e679531945f7dfd887a49d05bc0a5fd3baabf8aef396f5"


def test_the_paper_prompt_hash_is_pinned():
    assert prompt_sha256(DEFAULT_SYSTEM_PROMPT) == PAPER_PROMPT_SHA256
    assert study_prompt(DEFAULT_SYSTEM_PROMPT, None, []).sha256 == PAPER_PROMPT_SHA256


def test_the_paper_question_bytes_are_unchanged():
    request = question_request(DEFAULT_SYSTEM_PROMPT, "Pokémon Red", "Which badge does {Brock} award?")
    assert request.user == "Game: Pokémon Red\nQuestion: Which badge does {Brock} award?"
    assert request.user == USER_TEMPLATE.format(title="Pokémon Red",
                                                question="Which badge does {Brock} award?")
    assert request.system == DEFAULT_SYSTEM_PROMPT


def test_a_paper_run_records_the_paper_hash(tmp_path, emulator, keys):
    emu = emulator()
    config = write_config(tmp_path, [model_entry("openai", emu)], items=3)
    assert run_inprocess(config, tmp_path / "s.duckdb").status == 0
    with Store(tmp_path / "s.duckdb") as store:
        assert store.query("SELECT DISTINCT prompt_sha256 FROM runs WHERE kind = 'run'") == \
            [(PAPER_PROMPT_SHA256,)]


# -- the template ---------------------------------------------------------------------------------

def test_a_template_fills_from_the_items_own_columns_extras_included():
    prompt = study_prompt("S", "Library: {library} ({pages} pages, {tags})\n{{literal}} {question}",
                          ["subset", "question", "library", "pages", "tags"])
    request = prompt.request({"question": "Q?", "library": "Python", "pages": 6.2,
                              "tags": ["a", "b"], "subset": "official"})
    assert request.user == 'Library: Python (6.2 pages, ["a", "b"])\n{literal} Q?'
    assert prompt.sha256 == sha256_text("S\x00" + prompt.template) != PAPER_PROMPT_SHA256


@pytest.mark.parametrize(("template", "problem"), [
    ("Q: {questoin}", "field {questoin} is not a column of the items (columns: subset, question, "
                      "library; did you mean {question}?)"),
    ("Q: {colour}", "field {colour} is not a column of the items (columns: subset, question, "
                    "library)"),
    ("{question} {reference}", "field {reference} may not be asked (R1: a question shows neither "
                               "its answer nor its item id)"),
    ("{item_id}: {question}", "field {item_id} may not be asked"),
    ("{question!r}", "field {question!r} is not a bare column name"),
    ("{question:>40}", "field {question:>40} is not a bare column name"),
    ("{library.upper}", "field {library.upper} is not a bare column name"),
    ("{question} }", "Single '}' encountered in format string (write {{ and }} for literal braces)"),
    ("{}", "field {} is not a bare column name"),
])
def test_a_bad_field_is_one_line_naming_it(template, problem):
    with pytest.raises(UserError) as caught:
        study_prompt("S", template, ["subset", "question", "library"], "study.toml: [prompt] user")
    assert str(caught.value).startswith(f"study.toml: [prompt] user: {problem}")
    assert "\n" not in str(caught.value)


def test_the_example_study_asks_with_its_template_over_real_sockets(tmp_path, emulator, monkeypatch):
    monkeypatch.setenv("CONTAM_EMULATOR_KEY", "anything")
    emu = emulator(knowledge=Knowledge.from_file(EXAMPLE / "items-contam.csv"))
    config = example_config(tmp_path, emu)
    import_example_items(tmp_path / "s.duckdb")
    recorder = Recorder()
    result = run_inprocess(config, tmp_path / "s.duckdb", provider_factory=recorder.factory)
    assert result.status == 0, result.err
    sent = sorted({text for _, _, text in recorder.sent})
    assert len(recorder.sent) == 12 and len(sent) == 6
    assert "Library: Python\nQuestion: Which module provides the Counter class?\n" \
           "Reply with the bare name, no {braces}." in sent
    template, system = TEMPLATE, SYSTEM
    with Store(tmp_path / "s.duckdb") as store:
        assert store.query("SELECT DISTINCT prompt_sha256 FROM runs WHERE kind = 'run'") == \
            [(prompt_sha256(system, template),)]
        assert store.count("answers") == 12


def test_an_unknown_field_in_a_run_is_one_line_and_asks_nothing(tmp_path, emulator, monkeypatch,
                                                               contam):
    monkeypatch.setenv("CONTAM_EMULATOR_KEY", "anything")
    emu = emulator()
    config = example_config(tmp_path, emu, user='"Library: {libary}\\nQ: {question}"')
    import_example_items(tmp_path / "s.duckdb")
    status, out, err = contam("run", config, "--no-progress")
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.strip() == (f"contam run: {config}: [prompt] user: field {{libary}} is not a column "
                           "of the items (columns: subset, question, library, pages, tags; did "
                           "you mean {library}?)")
    with Store(tmp_path / "s.duckdb") as store:
        assert (store.count("runs"), store.count("answers"), store.count("attempts")) == (0, 0, 0)


def test_question_prompt_is_the_paper_one_by_default():
    assert QuestionPrompt("S").template == USER_TEMPLATE == "Game: {title}\nQuestion: {question}"
