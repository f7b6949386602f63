"""The emulator itself, spoken to with plain httpx and raw sockets (no provider code involved)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import httpx
import orjson
import pytest

from contam.harness.cli import build_parser, emulator_settings_from_args
from contam.harness.errors import UserError
from contam.harness.store import Store, utc_now
from contam.metrics.judge import JUDGE_RUBRIC, judge_request
from contam.harness.emulator.server import (
    EmulatorSettings,
    Step,
    default_answer,
    judge_label,
    parse_faults,
    parse_step,
)

OPENAI_BODY = {"model": "gpt-emu", "messages": [{"role": "user", "content": "Who?"}]}


def chat(client: httpx.Client, emu, model: str = "gpt-emu", **headers) -> httpx.Response:
    return client.post(f"{emu.url}/v1/chat/completions", headers=headers,
                       json={**OPENAI_BODY, "model": model})


def calls(emu, path: str, body: dict, n: int, **headers) -> list[httpx.Response]:
    with httpx.Client(timeout=5) as client:
        return [client.post(f"{emu.url}{path}", json=body, headers=headers) for _ in range(n)]


# ----------------------------------------------------------------------------- settings

@pytest.mark.parametrize(("text", "step"), [
    ("ok", Step("ok")), ("500", Step("status", 500)), ("529", Step("status", 529)),
    ("429", Step("rate", 429, 1.0)), ("429:1.5", Step("rate", 429, 1.5)),
    ("429date:3", Step("rate_date", 429, 3.0)), ("reset", Step("reset")), ("HANG", Step("hang")),
    ("quota", Step("quota")), ("malformed", Step("malformed")),
])
def test_parse_step(text: str, step: Step) -> None:
    assert parse_step(text) == step


@pytest.mark.parametrize("text", ["", "200", "429:soon", "429:-1", "boom", "500:2", "ok:1"])
def test_parse_step_refuses_nonsense(text: str) -> None:
    with pytest.raises(ValueError):
        parse_step(text)


def test_parse_faults() -> None:
    assert parse_faults("500=0.05, 529=0.02,reset=0.01,malformed=0.01,hang=0.01") == {
        "500": 0.05, "529": 0.02, "reset": 0.01, "malformed": 0.01, "hang": 0.01}
    assert parse_faults("") == {}
    for bad in ("500", "500=x", "teapot=0.1", "500=0.7,529=0.7", "500=1.5"):
        with pytest.raises(ValueError):
            parse_faults(bad)


def test_settings_refuse_bad_values() -> None:
    for bad in ({"script": ["nope"]}, {"faults": {"500": 2.0}}, {"rpm": 0}, {"latency_ms": -1},
                {"slots": 0}):
        with pytest.raises(ValueError):
            EmulatorSettings(**bad)


def test_cli_arguments_become_settings() -> None:
    args = build_parser().parse_args(["emulator", "--latency-ms", "200", "--rpm", "60",
                                      "--faults", "500=0.05,hang=0.01", "--served-model", "x",
                                      "--quota-per-day", "100", "--seed", "3"])
    settings = emulator_settings_from_args(args)
    assert (settings.latency_ms, settings.rpm, settings.served_model, settings.quota_per_day,
            settings.seed) == (200, 60, "x", 100, 3)
    assert settings.faults == {"500": 0.05, "hang": 0.01}
    assert settings.record is False  # a long-running server must not grow without bound
    with pytest.raises(UserError, match="teapot"):
        emulator_settings_from_args(build_parser().parse_args(["emulator", "--faults", "teapot=1"]))


# ----------------------------------------------------------------------------- behaviour

def test_script_is_consumed_in_order_then_normal_service(emulator) -> None:
    emu = emulator(script=["500", "429:1.5", "529", "ok"])
    statuses = [r.status_code for r in calls(emu, "/v1/chat/completions", OPENAI_BODY, 5)]
    assert statuses == [500, 429, 529, 200, 200]
    emu.push_script("503")
    assert [r.status_code for r in calls(emu, "/v1/chat/completions", OPENAI_BODY, 2)] == [503, 200]


def test_on_sent_sees_each_answer_after_it_went_out_with_its_arrival_time(emulator) -> None:
    sent = []
    emu = emulator(latency_ms=50, script=["500"],
                   on_sent=lambda request, answer: sent.append((request, answer, time.time())))
    with httpx.Client(timeout=5) as client:
        before = time.time()
        statuses = [chat(client, emu).status_code for _ in range(2)]
    deadline = time.monotonic() + 2
    while len(sent) < 2 and time.monotonic() < deadline:  # on_sent runs on the server's thread,
        time.sleep(0.01)  # after the reply is on the socket: the client may have read it first
    assert statuses == [500, 200] and [answer.status for _, answer, _ in sent] == [500, 200]
    request, answer, at = sent[1]
    assert request.path == "/v1/chat/completions" and b"Emulated answer" in answer.body
    assert before <= sent[0][0].received_at <= request.received_at <= at - 0.04  # 50 ms latency


def test_rpm_is_enforced_per_api_and_model(emulator) -> None:
    emu = emulator(rpm=2)
    with httpx.Client() as client:
        assert [chat(client, emu).status_code for _ in range(3)] == [200, 200, 429]
        assert chat(client, emu, model="other-model").status_code == 200
        gemini = client.post(f"{emu.url}/v1beta/models/gpt-emu:generateContent",
                             json={"contents": [{"parts": [{"text": "q"}]}]})
        assert gemini.status_code == 200  # same model name, different API: its own window
        limited = chat(client, emu)
    assert limited.headers["x-ratelimit-remaining-requests"] == "0"
    assert 0 < int(limited.headers["retry-after"]) <= 60
    assert limited.json()["error"]["code"] == "rate_limit_exceeded"


def test_gemini_429_hint_is_in_the_body_not_a_header(emulator) -> None:
    emu = emulator(script=["429:1.234"])
    (response,) = calls(emu, "/v1beta/models/gemini-x:generateContent",
                        {"contents": [{"parts": [{"text": "q"}]}]}, 1)
    assert response.status_code == 429 and "retry-after" not in response.headers
    error = response.json()["error"]
    assert error["status"] == "RESOURCE_EXHAUSTED"
    delays = [d["retryDelay"] for d in error["details"] if d["@type"].endswith("RetryInfo")]
    assert delays == ["1.234s"]


def test_per_day_quota_shapes(emulator) -> None:
    emu = emulator(quota_per_day=1)
    gemini_body = {"contents": [{"parts": [{"text": "q"}]}]}
    first, second = calls(emu, "/v1beta/models/gemini-x:generateContent", gemini_body, 2)
    assert first.status_code == 200 and second.status_code == 429
    violations = [v for d in second.json()["error"]["details"]
                  if d["@type"].endswith("QuotaFailure") for v in d["violations"]]
    assert violations[0]["quotaId"] == "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
    _, openai = calls(emu, "/v1/chat/completions", OPENAI_BODY, 2)
    assert openai.status_code == 429 and openai.json()["error"]["code"] == "insufficient_quota"


def test_fault_rates_are_drawn_and_reproducible(emulator) -> None:
    always = emulator(faults={"503": 1.0})
    assert {r.status_code for r in calls(always, "/v1/chat/completions", OPENAI_BODY, 5)} == {503}
    runs = []
    for _ in range(2):
        emu = emulator(faults={"500": 0.5}, seed=11)
        runs.append([r.status_code for r in calls(emu, "/v1/chat/completions", OPENAI_BODY, 20)])
    assert runs[0] == runs[1] and set(runs[0]) == {200, 500}


def test_reset_malformed_and_hang(emulator) -> None:
    emu = emulator(script=["reset", "malformed", "hang", "ok"], hang_s=10)
    with httpx.Client(timeout=0.3) as client:
        with pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)):
            chat(client, emu)
        broken = chat(client, emu)
        assert broken.status_code == 200
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(broken.content)
        with pytest.raises(httpx.ReadTimeout):
            chat(client, emu)
        assert chat(client, emu).status_code == 200  # the server is still serving


def test_wrong_keys_get_each_apis_auth_error(emulator) -> None:
    emu = emulator(api_keys=frozenset({"good-key"}))
    with httpx.Client() as client:
        openai = chat(client, emu, authorization="Bearer wrong-key-123456")
        anthropic = client.post(f"{emu.url}/v1/messages", headers={
            "x-api-key": "wrong", "anthropic-version": "2023-06-01"}, json={
            "model": "c", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}]})
        gemini = client.post(f"{emu.url}/v1beta/models/g:generateContent",
                             headers={"x-goog-api-key": "wrong"},
                             json={"contents": [{"parts": [{"text": "q"}]}]})
        ollama = client.post(f"{emu.url}/api/generate", json={"model": "m", "prompt": "q"})
        good = chat(client, emu, authorization="Bearer good-key")
    assert (openai.status_code, openai.json()["error"]["code"]) == (401, "invalid_api_key")
    assert "wrong-key-123456" not in openai.text  # quoted masked, as OpenAI does
    assert anthropic.json()["error"]["type"] == "authentication_error"
    assert gemini.status_code == 400 and "API key not valid" in gemini.text
    assert (ollama.status_code, ollama.json()) == (401, {"error": "unauthorized"})
    assert good.status_code == 200


def test_anthropic_requires_version_header_and_max_tokens(emulator) -> None:
    emu = emulator()
    body = {"model": "c", "messages": [{"role": "user", "content": "q"}]}
    no_version, = calls(emu, "/v1/messages", {**body, "max_tokens": 5}, 1)
    no_max, = calls(emu, "/v1/messages", body, 1, **{"anthropic-version": "2023-06-01"})
    assert no_version.status_code == 400 and "anthropic-version" in no_version.text
    assert no_max.status_code == 400 and "max_tokens" in no_max.text


def test_side_endpoints_and_unknown_paths(emulator) -> None:
    emu = emulator(known_models=frozenset({"llama3.2", "gpt-oss:120b-cloud"}))
    with httpx.Client() as client:
        tags = client.get(f"{emu.url}/api/tags").json()["models"]
        cloud = client.post(f"{emu.url}/api/show", json={"model": "gpt-oss:120b-cloud"}).json()
        missing = client.post(f"{emu.url}/api/show", json={"model": "mistral"})
        models = client.get(f"{emu.url}/v1/models").json()
        unknown = client.get(f"{emu.url}/v2/anything")
    assert sorted(m["name"] for m in tags) == ["gpt-oss:120b-cloud", "llama3.2"]
    assert cloud["remote_host"] == "https://ollama.com:443"
    assert missing.status_code == 404
    assert models["object"] == "list"
    assert unknown.status_code == 404


def test_responder_emulates_a_judge_and_requests_are_recorded(emulator) -> None:
    emu = emulator(responder=lambda q: "Right" if "Pallet" in q else "Wrong")
    body = {"model": "judge", "messages": [{"role": "system", "content": "rubric"},
                                           {"role": "user", "content": "Reference: Pallet Town"}]}
    (response,) = calls(emu, "/v1/chat/completions", body, 1, authorization="Bearer k")
    assert response.json()["choices"][0]["message"]["content"] == "Right"
    (recorded,) = emu.requests
    assert (recorded.method, recorded.path, recorded.body) == ("POST", "/v1/chat/completions", body)
    assert recorded.headers["authorization"] == "Bearer k"


# ----------------------------------------------------------------------------- the default judge

def judge_bodies(user: str, system: str = JUDGE_RUBRIC) -> dict[str, tuple[str, dict, dict]]:
    """One judge call per API as the harness's providers send it: (path, body, headers)."""
    return {
        "openai": ("/v1/chat/completions", {"model": "j", "messages": [
            {"role": "system", "content": system}, {"role": "user", "content": user}]}, {}),
        "anthropic": ("/v1/messages", {"model": "j", "max_tokens": 16, "system": system,
                                       "messages": [{"role": "user", "content": user}]},
                      {"anthropic-version": "2023-06-01"}),
        "gemini": ("/v1beta/models/j:generateContent", {
            "systemInstruction": {"parts": [{"text": system}]},
            "contents": [{"role": "user", "parts": [{"text": user}]}]}, {}),
        "ollama": ("/api/generate", {"model": "j", "system": system, "prompt": user, "stream": False}, {}),
    }


def reply_text(api: str, body: dict) -> str:
    return {"openai": lambda: body["choices"][0]["message"]["content"],
            "anthropic": lambda: body["content"][0]["text"],
            "gemini": lambda: body["candidates"][0]["content"]["parts"][0]["text"],
            "ollama": lambda: body["response"]}[api]()


@pytest.mark.parametrize(("reference", "answer", "label"), [
    ("Pallet Town", "In PALLET town, of course.", "right"),
    ("TM34 (Bide)", "Brock gives TM34, which is Bide.", "right"),
    ("Boulder Badge and TM34 (Bide)", "The Boulder Badge.", "partially right"),
    ("Rijon Tunnel from eastern Mt. Boulder", "Through the tunnel in the east.", "partially right"),
    ("Professor Tim", "Professor Oak", "partially right"),
    ("Caper City", "Azalea Town", "wrong"),
    ("The Cascade Badge", "the Boulder one", "wrong"),  # 'the' alone is not a shared fact
    ("Lugia", "", "wrong"),
])
def test_judge_label_rule(reference: str, answer: str, label: str) -> None:
    assert judge_label(reference, answer) == label


def test_default_responder_grades_judge_requests_on_every_api(emulator) -> None:
    emu = emulator()
    cases = {("Pallet Town", "You start in Pallet Town."): "right",
             ("Boulder Badge and TM34 (Bide)", "The Boulder Badge"): "partially right",
             ("Caper City", "Azalea Town"): "wrong"}
    with httpx.Client(timeout=5) as client:
        for (reference, answer), label in cases.items():
            user = judge_request(reference, answer).user
            for api, (path, body, headers) in judge_bodies(user).items():
                response = client.post(f"{emu.url}{path}", json=body, headers=headers)
                assert response.status_code == 200, (api, response.text)
                assert reply_text(api, response.json()) == label, api


def test_default_responder_grades_a_judge_request_under_a_studys_own_rubric(emulator) -> None:
    """A judge request is told by its user text: a study's own `[judge] rubric` replaces the
    system prompt, and the emulated judge still grades it."""
    emu = emulator()
    user = judge_request("Pallet Town", "Pallet Town").user
    path, body, _ = judge_bodies(user, system="Grade it: right, partially right or wrong.")["openai"]
    (response,) = calls(emu, path, body, 1)
    assert reply_text("openai", response.json()) == "right"


def test_default_responder_answers_ordinary_questions_as_before(emulator) -> None:
    """A question (user text not shaped as a judge request) under the rubric is still a question."""
    emu = emulator()
    user = "Game: Pokemon Red\nQuestion: Where does the player start?"
    path, body, _ = judge_bodies(user)["openai"]
    (response,) = calls(emu, path, body, 1)
    assert reply_text("openai", response.json()) == default_answer(user)


def test_contam_judge_against_the_default_emulator_labels_every_answer(emulator, contam, tmp_path,
                                                                       monkeypatch) -> None:
    """The whole `contam judge` path (anthropic provider, engine, parse_label) accepts its replies."""
    store = tmp_path / "s.duckdb"
    cells = {("i1", "Pallet Town", "Pallet Town, Kanto"): "right",
             ("i2", "Boulder Badge and TM34 (Bide)", "Boulder Badge"): "partial",
             ("i3", "Caper City", "Azalea Town"): "wrong"}
    with Store(store, create=True) as s:
        s.append("items", [{"item_id": i, "title": "T", "subset": "official", "question": "q?",
                            "reference": ref, "added_at": utc_now()} for i, ref, _ in cells])
        s.append("answers", [{"item_id": i, "model": "m", "answer": a, "answer_raw": a,
                              "created_at": utc_now()} for i, _, a in cells])
    emu = emulator()
    monkeypatch.setenv("CONTAM_EMU_KEY", "k")
    config = tmp_path / "judge.toml"
    config.write_text(f'[[models]]\nname = "m"\nprovider = "openai"\nmodel = "x"\n'
                      f'[judge]\nname = "emu"\nprovider = "anthropic"\nmodel = "claude-emu"\n'
                      f'base_url = "{emu.base_url("anthropic")}"\napi_key_env = "CONTAM_EMU_KEY"\n',
                      encoding="utf-8")
    status, _, err = contam("judge", config, "--store", store, "--no-progress")
    assert status == 0, err
    with Store(store, read_only=True) as s:
        got = dict(s.query("SELECT item_id, label FROM latest_labels WHERE rater = 'judge:emu'"))
    assert got == {i: label for (i, _, _), label in cells.items()}


def test_keep_alive_serves_many_requests_on_one_connection(emulator) -> None:
    emu = emulator()
    with httpx.Client() as client:
        assert all(chat(client, emu).status_code == 200 for _ in range(20))
    assert len({r.client for r in emu.requests}) == 1


def test_slots_make_requests_beyond_them_wait_their_turn(emulator) -> None:
    """A replica with 2 slots and 200 ms per request answers 6 requests sent at once in three
    rounds; the CLI's --slots sets it."""
    emu = emulator(latency_ms=200, slots=2)

    async def six_at_once() -> list[float]:
        async with httpx.AsyncClient(timeout=5) as client:
            started = asyncio.get_running_loop().time()

            async def one() -> float:
                response = await client.post(f"{emu.url}/v1/chat/completions", json=OPENAI_BODY)
                assert response.status_code == 200
                return asyncio.get_running_loop().time() - started

            return sorted(await asyncio.gather(*(one() for _ in range(6))))

    done = asyncio.run(six_at_once())
    assert done[1] < 0.38 and 0.38 < done[2] < 0.58 and done[5] > 0.58
    args = build_parser().parse_args(["emulator", "--slots", "4"])
    assert emulator_settings_from_args(args).slots == 4


def test_hundreds_of_concurrent_connections(emulator) -> None:
    """300 connections at once, each sending three requests over keep-alive."""
    emu = emulator(latency_ms=50)
    body = orjson.dumps(OPENAI_BODY)
    request = (b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
               b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    async def connection() -> list[bytes]:
        reader, writer = await asyncio.open_connection(emu.host, emu.port)
        statuses = []
        for _ in range(3):
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length"))
            await reader.readexactly(length)
            statuses.append(head.split(b" ")[1])
        writer.close()
        return statuses

    async def main() -> list[list[bytes]]:
        return await asyncio.gather(*(connection() for _ in range(300)))

    results = asyncio.run(main())
    assert all(statuses == [b"200"] * 3 for statuses in results)
    assert len(emu.requests) == 900
    assert len({r.client for r in emu.requests}) == 300


def test_contam_emulator_command_serves_until_sigterm() -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen([sys.executable, "-m", "contam.harness.cli", "emulator", "--port", "0",
                                "--served-model", "stand-in"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        first_line = process.stdout.readline()
        url = first_line.strip().rsplit(" ", 1)[-1]
        assert url.startswith("http://127.0.0.1:")
        with httpx.Client() as client:
            reply = client.post(f"{url}/api/generate", json={"model": "m", "prompt": "q"})
        assert reply.json()["model"] == "stand-in"
        with httpx.Client() as client:  # the stand-alone emulator also acts as a judge
            graded = client.post(f"{url}/api/generate", json={
                "model": "judge", "system": JUDGE_RUBRIC,
                "prompt": judge_request("Lugia", "It is Lugia.").user})
        assert graded.json()["response"] == "right"
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
