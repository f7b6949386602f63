"""`contam judge` over real loopback sockets against the emulator, with a real DuckDB store.

The emulator's ``responder`` plays the judge: it reads the one user message the harness sent and
answers with a label (or with something that is not one).
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import anyio
import orjson
import pytest
from rich.console import Console

from contam.harness.cli import print_result
from contam.harness.config import load_config
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.jobs.judge import BYPASS_SOURCE, execute_judge
from contam.harness.jobs.run import RunOptions
from contam.harness.store import Store, utc_now
from contam.metrics.judge import JUDGE_RUBRIC, MalformedLabel, parse_label, rubric_sha256

KEY_ENV, KEY = "CONTAM_TEST_JUDGE_KEY", "sk-judge-test-9f8e7d"
JUDGE_MODELS = {"openai": "gpt-emu-judge", "anthropic": "claude-emu-judge",
                "gemini": "gemini-emu-judge", "ollama": "llama-emu-judge:8b"}

# item_id, title, question, reference: ids, titles and questions are distinctive strings so a
# test can prove none of them reached the judge.
ITEMS = [
    ("itm-q7x-001", "Pokemon Red", "Which badge does Brock award in Pewter City?", "Boulder Badge"),
    ("itm-q7x-002", "Pokemon Crystal", "Which Pokemon guards the Whirl Islands?", "Lugia"),
    ("itm-q7x-003", "Pokemon Prism", "What is the name of the Naljo region's first town?",
     "Caper City"),
]
ANSWERS = {  # (item_id, model) -> answer
    ("itm-q7x-001", "model-a"): "Boulder Badge",
    ("itm-q7x-002", "model-a"): "Lugia, I believe",
    ("itm-q7x-003", "model-a"): "Azalea Town",
    ("itm-q7x-001", "model-b"): "The Cascade Badge",
    ("itm-q7x-002", "model-b"): "Lugia",
    ("itm-q7x-003", "model-b"): "Caper City",
}
USER_TEXT = re.compile(r"\AReference answer: (.*)\nAnswer to grade: (.*)\Z", re.DOTALL)


def grade(user: str) -> str:
    """A deterministic stand-in judge: exact match right, containment partial, else wrong."""
    reference, answer = USER_TEXT.match(user).groups()
    if answer == reference:
        return "Right."
    return " partially right " if reference in answer else "WRONG"


def expected_label(reference: str, answer: str) -> str:
    return {"Right.": "right", " partially right ": "partial", "WRONG": "wrong"}[
        grade(f"Reference answer: {reference}\nAnswer to grade: {answer}")]


# -- fixtures and helpers ----------------------------------------------------------------------

@pytest.fixture(autouse=True)
def judge_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def seed(store_path: Path, answers: dict[tuple[str, str], str] = ANSWERS,
         items=ITEMS) -> None:
    with Store(store_path, create=True) as store:
        if items:
            store.append("items", [{"item_id": i, "title": t, "subset": "official", "question": q,
                                    "reference": r, "added_at": utc_now()} for i, t, q, r in items])
        store.append("answers", [{"item_id": i, "model": m, "answer": a, "answer_raw": a,
                                  "created_at": utc_now()} for (i, m), a in answers.items()])


def write_config(tmp_path: Path, emu, provider: str = "anthropic", *, max_attempts: int = 3,
                 judge: bool = True) -> Path:
    path = tmp_path / "judge.toml"
    text = f'[[models]]\nname = "model-a"\nprovider = "openai"\nmodel = "gpt-x"\n'
    if judge:
        text += (f'[judge]\nname = "emu-judge"\nprovider = "{provider}"\n'
                 f'model = "{JUDGE_MODELS[provider]}"\nbase_url = "{emu.base_url(provider)}"\n'
                 f'api_key_env = "{KEY_ENV}"\nconcurrency = 4\nmax_attempts = {max_attempts}\n'
                 f'timeout_s = 10\n')
    path.write_text(text, encoding="utf-8")
    return path


def judge(store_path: Path, config_path: Path, *, models=None, limit=None):
    out = io.StringIO()
    options = RunOptions(limit=limit, no_progress=True, console=Console(file=out, width=200),
                         handle_signals=False)
    with Store(store_path) as store:
        result = anyio.run(execute_judge, store, load_config(config_path), options, models)
    print_result(result, out, io.StringIO())
    return result, out.getvalue()


def generate_requests(emu) -> list:
    return [r for r in emu.requests
            if r.path in ("/v1/chat/completions", "/v1/messages", "/api/generate")
            or r.path.endswith(":generateContent")]


def query(store_path: Path, sql: str, params=None) -> list[tuple]:
    with Store(store_path, read_only=True) as store:
        return store.query(sql, params)


def expected_body(provider: str, system: str, user: str) -> dict:
    """The whole request body a judge call may have: the rubric, one user message, the envelope."""
    model = JUDGE_MODELS[provider]
    if provider == "anthropic":
        return {"model": model, "max_tokens": 16, "system": system,
                "messages": [{"role": "user", "content": user}]}
    if provider == "openai":
        return {"model": model, "max_completion_tokens": 16,
                "messages": [{"role": "system", "content": system},
                             {"role": "user", "content": user}]}
    if provider == "gemini":
        return {"contents": [{"role": "user", "parts": [{"text": user}]}],
                "systemInstruction": {"parts": [{"text": system}]},
                "generationConfig": {"maxOutputTokens": 16}}
    return {"model": model, "prompt": user, "system": system, "stream": False,
            "options": {"num_predict": 16}}


def _canonical(body: dict) -> bytes:
    return orjson.dumps(body, option=orjson.OPT_SORT_KEYS)


def system_of(provider: str, body: dict) -> str:
    return {"anthropic": lambda: body["system"],
            "openai": lambda: body["messages"][0]["content"],
            "gemini": lambda: body["systemInstruction"]["parts"][0]["text"],
            "ollama": lambda: body["system"]}[provider]()


def labels(store_path: Path) -> dict[tuple[str, str], str]:
    rows = query(store_path, "SELECT item_id, model, label FROM latest_labels")
    return {(item, model): label for item, model, label in rows}


# -- one stateless call per comparison ---------------------------------------------------------

@pytest.mark.parametrize("provider", list(JUDGE_MODELS))
def test_one_call_per_cell_carrying_only_rubric_reference_and_answer(tmp_path, provider):
    store_path = tmp_path / "s.duckdb"
    seed(store_path)
    with run_emulator(EmulatorSettings(responder=grade)) as emu:
        result, out = judge(store_path, write_config(tmp_path, emu, provider))
        sent = generate_requests(emu)

    references = {item: ref for item, _, _, ref in ITEMS}
    users = [f"Reference answer: {references[i]}\nAnswer to grade: {a}" for (i, _), a in ANSWERS.items()]
    # The full bodies, as a multiset: one request per cell, each nothing but the envelope, the
    # rubric and that cell's reference and answer.
    assert len(sent) == len(ANSWERS) == 6
    assert sorted(_canonical(r.body) for r in sent) == sorted(
        _canonical(expected_body(provider, JUDGE_RUBRIC, u)) for u in users)
    for request in sent:
        text = request.raw_body.decode()
        assert not any(item in text for item, *_ in ITEMS)
        assert not any(title in text or question in text for _, title, question, _ in ITEMS)
        assert not {"tools", "functions", "tool_choice", "tool_config"} & set(request.body)
    assert {system_of(provider, r.body) for r in sent} == {JUDGE_RUBRIC}

    assert result.exit_status == 0 and result.judged == 6 and result.malformed == 0
    assert labels(store_path) == {(i, m): expected_label(references[i], a)
                                  for (i, m), a in ANSWERS.items()}
    rows = query(store_path, "SELECT DISTINCT rater, rubric_sha256, run_id FROM labels")
    assert rows == [("judge:emu-judge", rubric_sha256(), result.run_id)]
    assert query(store_path, "SELECT DISTINCT kind FROM runs WHERE run_id = ?",
                 [result.run_id]) == [("judge",)]
    cells = query(store_path, "SELECT item_id, model, judge_label FROM cells")
    assert {(i, m): lab for i, m, lab in cells} == labels(store_path)
    attempts = query(store_path, "SELECT item_id, model, outcome FROM attempts")
    assert sorted(attempts) == sorted((i, m, "ok") for i, m in ANSWERS)
    assert "0 malformed" in out


def test_answers_are_sent_verbatim_and_one_per_request(tmp_path):
    """Answers that share no text: every request holds exactly one of them, and the right one."""
    store_path = tmp_path / "s.duckdb"
    answers = {("itm-q7x-001", "m1"): "alpha-answer-one", ("itm-q7x-001", "m2"): "beta-answer-two",
               ("itm-q7x-002", "m1"): "gamma-answer-three"}
    seed(store_path, answers)
    with run_emulator(EmulatorSettings(responder=grade)) as emu:
        judge(store_path, write_config(tmp_path, emu))
        sent = generate_requests(emu)
    assert len(sent) == 3
    for request in sent:
        present = [a for a in answers.values() if a in request.raw_body.decode()]
        assert len(present) == 1
        assert request.body["messages"][0]["content"].endswith(f"Answer to grade: {present[0]}")


# -- malformed replies -------------------------------------------------------------------------

def test_malformed_reply_is_recorded_and_asked_again(tmp_path):
    store_path = tmp_path / "s.duckdb"
    seed(store_path, {("itm-q7x-001", "model-a"): "Boulder Badge"})
    replies = iter(["I think it's right", "right"])
    with run_emulator(EmulatorSettings(responder=lambda user: next(replies))) as emu:
        result, out = judge(store_path, write_config(tmp_path, emu))
        assert len(generate_requests(emu)) == 2

    assert labels(store_path) == {("itm-q7x-001", "model-a"): "right"}
    assert query(store_path, "SELECT count(*) FROM labels") == [(1,)]
    attempts = query(store_path, "SELECT attempt, outcome, error FROM attempts ORDER BY attempt")
    assert [(n, outcome) for n, outcome, _ in attempts] == [(1, "malformed"), (2, "ok")]
    assert "malformed" in attempts[0][2] and "I think it's right" in attempts[0][2]
    assert result.malformed == 1 and result.failed == 0
    assert "1 malformed judge replies" in out


def test_always_malformed_stays_unlabelled_and_is_judged_by_a_later_run(tmp_path):
    store_path = tmp_path / "s.duckdb"
    seed(store_path, {("itm-q7x-001", "model-a"): "Boulder Badge"})
    reply = {"text": "Right, partially right"}
    with run_emulator(EmulatorSettings(responder=lambda user: reply["text"])) as emu:
        config = write_config(tmp_path, emu, max_attempts=3)
        first, out = judge(store_path, config)
        assert labels(store_path) == {}
        outcomes = query(store_path, "SELECT outcome FROM attempts")
        assert outcomes == [("malformed",)] * 3
        assert first.malformed == 3 and first.failed == 1 and first.exit_status == 1
        assert "1 cells unlabelled after all attempts" in out
        assert "emu-judge: 1 failed — MalformedLabel: malformed judge reply" in out

        reply["text"] = "Wrong"
        second, _ = judge(store_path, config)
    assert labels(store_path) == {("itm-q7x-001", "model-a"): "wrong"}
    assert second.judged == 1 and second.malformed == 0


@pytest.mark.parametrize("reply, label", [
    ("right", "right"), ("Right", "right"), ("right.", "right"), (" Partially right ", "partial"),
    ("PARTIALLY\n  RIGHT!", "partial"), ("wrong\n", "wrong"), ("Wrong .", "wrong"),
])
def test_bare_labels_are_read_after_whitespace_case_and_trailing_punctuation(reply, label):
    assert parse_label(reply) == label


@pytest.mark.parametrize("reply", [
    "", "   ", "right wrong", "Right, partially right", "I think it's right", "**right**",
    '"right"', "right?", "partial", "Label: right", "correct", "right\nwrong",
])
def test_anything_else_is_malformed_and_never_guessed(reply):
    with pytest.raises(MalformedLabel, match="malformed judge reply") as caught:
        parse_label(reply)
    assert caught.value.retryable and caught.value.outcome == "malformed"


def test_malformed_error_shows_the_reply_truncated():
    with pytest.raises(MalformedLabel) as caught:
        parse_label("right " * 200)
    assert len(str(caught.value)) < 400 and str(caught.value).endswith("...'")


# -- deterministic cells -----------------------------------------------------------------------

def test_blank_answer_is_wrong_without_a_call_and_empty_reference_is_flagged(tmp_path):
    store_path = tmp_path / "s.duckdb"
    items = [*ITEMS[:2], ("itm-q7x-009", "Pokemon Prism", "Which town has no reference?", " ")]
    answers = {("itm-q7x-001", "model-a"): "  ",  # blank: wrong without a call
               ("itm-q7x-009", "model-a"): "Caper City",  # empty reference: flagged
               ("itm-q7x-002", "model-a"): "Lugia"}  # judged
    seed(store_path, answers, items)
    with run_emulator(EmulatorSettings(responder=grade)) as emu:
        config = write_config(tmp_path, emu)
        result, out = judge(store_path, config)
        sent = generate_requests(emu)
        assert len(sent) == 1 and "Answer to grade: Lugia" in sent[0].raw_body.decode()

        assert labels(store_path) == {("itm-q7x-001", "model-a"): "wrong",
                                      ("itm-q7x-002", "model-a"): "right"}
        bypass = query(store_path, "SELECT rater, rubric_sha256, run_id, source_file FROM labels "
                                   "WHERE item_id = 'itm-q7x-001'")
        assert bypass == [("judge:emu-judge", rubric_sha256(), result.run_id, BYPASS_SOURCE)]
        assert query(store_path, "SELECT item_id FROM attempts") == [("itm-q7x-002",)]
        assert result.bypassed == 1 and result.flagged == [("itm-q7x-009", "model-a")]
        assert "1 cells flagged: empty reference" in out and "itm-q7x-009/model-a" in out

        again, out = judge(store_path, config)
        assert len(generate_requests(emu)) == 1  # nothing new was sent
    assert query(store_path, "SELECT count(*) FROM labels") == [(2,)]
    assert again.bypassed == 0 and again.flagged == [("itm-q7x-009", "model-a")]
    assert "1 cells flagged: empty reference" in out


# -- resume ------------------------------------------------------------------------------------

def test_resume_judges_only_what_is_new_or_changed(tmp_path):
    store_path = tmp_path / "s.duckdb"
    seed(store_path)
    with run_emulator(EmulatorSettings(responder=grade)) as emu:
        config = write_config(tmp_path, emu)
        judge(store_path, config)
        assert len(generate_requests(emu)) == 6

        second, _ = judge(store_path, config)
        assert len(generate_requests(emu)) == 6 and second.judged == 0
        assert query(store_path, "SELECT count(*) FROM labels") == [(6,)]

        new_model = {(item, "model-c"): f"new answer {n}" for n, (item, *_) in enumerate(ITEMS)}
        seed(store_path, new_model, items=())
        third, _ = judge(store_path, config)
        sent = generate_requests(emu)[6:]
        assert len(sent) == 3 and third.judged == 3
        assert all("Answer to grade: new answer" in r.raw_body.decode() for r in sent)

        # A corrected answer and a label under another rubric are judged again; nothing else is.
        seed(store_path, {("itm-q7x-001", "model-b"): "Boulder Badge"}, items=())
        with Store(store_path) as store:
            store.append("labels", [{"item_id": "itm-q7x-002", "model": "model-a",
                                     "rater": "judge:emu-judge", "label": "right",
                                     "rubric_sha256": "0" * 64, "created_at": utc_now()}])
        fourth, _ = judge(store_path, config)
        sent = generate_requests(emu)[9:]
    assert fourth.judged == 2 and len(sent) == 2
    assert labels(store_path)[("itm-q7x-001", "model-b")] == "right"
    assert labels(store_path)[("itm-q7x-002", "model-a")] == "partial"


def test_models_and_limit_through_the_command_line(tmp_path, contam):
    store_path = tmp_path / "s.duckdb"
    seed(store_path)
    with run_emulator(EmulatorSettings(responder=grade)) as emu:
        config = write_config(tmp_path, emu)
        status, out, err = contam("judge", config, "--store", store_path, "--models", "model-b",
                                  "--limit", "2", "--no-progress")
        assert status == 0, err
        assert len(generate_requests(emu)) == 2
        assert labels(store_path) == {("itm-q7x-001", "model-b"): "wrong",
                                      ("itm-q7x-002", "model-b"): "right"}
        assert "judge:emu-judge: 2/2 cells labelled" in out

        status, _, err = contam("judge", config, "--store", store_path, "--models", "nobody")
        assert status == 2 and "no answers from model nobody" in err


def test_config_without_a_judge_is_refused(tmp_path, contam):
    store_path = tmp_path / "s.duckdb"
    seed(store_path)
    with run_emulator(EmulatorSettings()) as emu:
        config = write_config(tmp_path, emu, judge=False)
    status, _, err = contam("judge", config, "--store", store_path)
    assert status == 2 and "no [judge] table" in err


def test_a_stopped_judge_exits_non_zero_and_leaves_cells_for_the_next_run(tmp_path, contam):
    store_path = tmp_path / "s.duckdb"
    seed(store_path)
    settings = EmulatorSettings(responder=grade, api_keys=frozenset({"the-real-key"}))
    with run_emulator(settings) as emu:
        config = write_config(tmp_path, emu)
        status, out, err = contam("judge", config, "--store", store_path, "--no-progress")
    assert status == 1
    assert "STOPPED (auth)" in out and "again to resume" not in err
    assert "contam judge: the judge stopped (auth): " in err and "; fix that, then run" in err
    assert KEY not in out + err
    assert query(store_path, "SELECT count(*) FROM labels") == [(0,)]
    # Requests already in flight when the first 401 came back may add more rows; none is ok.
    assert {o for (o,) in query(store_path, "SELECT outcome FROM attempts")} == {"fatal"}


def test_contam_judge_without_its_key_sends_nothing_and_exits_non_zero(tmp_path, contam, monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    store_path = tmp_path / "s.duckdb"
    seed(store_path)
    with run_emulator(EmulatorSettings()) as emu:
        config = write_config(tmp_path, emu)
        status, out, err = contam("judge", config, "--store", store_path, "--no-progress")
        sent = generate_requests(emu)
    assert status == 1 and sent == []
    assert sum(KEY_ENV in line for line in out.splitlines()) == 2  # the notice, then the summary
    assert "judge STOPPED (missing key)" in out and "contam judge: the judge stopped" in err
    assert query(store_path, "SELECT count(*) FROM attempts") == [(0,)]
