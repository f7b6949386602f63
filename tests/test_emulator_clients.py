"""Faithfulness: the providers' official Python clients parse the emulator's replies and errors.

If the emulator drifted from a real API's shapes, these clients (which validate replies with
their own models) would fail here before our providers were ever fooled by a wrong emulator.
"""

from __future__ import annotations

import anthropic
import ollama
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from contam.harness.emulator.server import EmulatorSettings, default_answer, run_emulator

QUESTION = "Game: Pokemon Gold\nQuestion: Which region follows Johto?"
ANSWER = default_answer(QUESTION)


@pytest.fixture
def emu():
    with run_emulator(EmulatorSettings()) as running:
        yield running


def test_openai_client_parses_reply_and_errors(emu) -> None:
    client = openai.OpenAI(base_url=emu.base_url("openai"), api_key="sk-client-test", max_retries=0)
    completion = client.chat.completions.create(
        model="gpt-emu", messages=[{"role": "system", "content": "Be brief."},
                                   {"role": "user", "content": QUESTION}], temperature=0)
    assert completion.choices[0].message.content == ANSWER
    assert completion.choices[0].finish_reason == "stop"
    assert completion.model == "gpt-emu"
    assert completion.usage.completion_tokens == len(ANSWER.split())
    emu.push_script("429:1.5", "quota")
    with pytest.raises(openai.RateLimitError) as limited:
        client.chat.completions.create(model="gpt-emu", messages=[{"role": "user", "content": "q"}])
    assert limited.value.code == "rate_limit_exceeded"
    assert limited.value.response.headers["retry-after"] == "1.5"
    with pytest.raises(openai.RateLimitError) as quota:
        client.chat.completions.create(model="gpt-emu", messages=[{"role": "user", "content": "q"}])
    assert quota.value.code == "insufficient_quota"


def test_google_genai_client_parses_reply_and_errors(emu) -> None:
    client = genai.Client(api_key="gemini-client-test",
                          http_options=genai_types.HttpOptions(base_url=emu.url, api_version="v1beta"))
    response = client.models.generate_content(
        model="gemini-emu", contents=QUESTION,
        config=genai_types.GenerateContentConfig(system_instruction="Be brief.", temperature=0))
    assert response.text == ANSWER
    assert response.model_version == "gemini-emu"
    assert response.usage_metadata.candidates_token_count == len(ANSWER.split())
    assert response.candidates[0].finish_reason == genai_types.FinishReason.STOP
    assert emu.requests[-1].path == "/v1beta/models/gemini-emu:generateContent"
    emu.push_script("429:2.5", "quota")
    with pytest.raises(genai_errors.ClientError) as limited:
        client.models.generate_content(model="gemini-emu", contents="q")
    assert (limited.value.code, limited.value.status) == (429, "RESOURCE_EXHAUSTED")
    retry = [d for d in limited.value.details["error"]["details"] if d["@type"].endswith("RetryInfo")]
    assert retry[0]["retryDelay"] == "2.5s"
    with pytest.raises(genai_errors.ClientError) as quota:
        client.models.generate_content(model="gemini-emu", contents="q")
    assert "PerDay" in str(quota.value.details)


def test_anthropic_client_parses_reply_and_errors(emu) -> None:
    client = anthropic.Anthropic(base_url=emu.url, api_key="anthropic-client-test", max_retries=0)
    message = client.messages.create(model="claude-emu", max_tokens=64, system="Be brief.",
                                     messages=[{"role": "user", "content": QUESTION}])
    assert message.content[0].text == ANSWER
    assert (message.model, message.stop_reason) == ("claude-emu", "end_turn")
    assert message.usage.output_tokens == len(ANSWER.split())
    emu.push_script("529", "429:3")
    with pytest.raises(anthropic.APIStatusError) as overloaded:
        client.messages.create(model="claude-emu", max_tokens=8,
                               messages=[{"role": "user", "content": "q"}])
    assert overloaded.value.status_code == 529
    assert overloaded.value.body["error"]["type"] == "overloaded_error"
    with pytest.raises(anthropic.RateLimitError) as limited:
        client.messages.create(model="claude-emu", max_tokens=8,
                               messages=[{"role": "user", "content": "q"}])
    assert limited.value.response.headers["retry-after"] == "3"


def test_ollama_client_parses_reply_and_errors(emu) -> None:
    client = ollama.Client(host=emu.url)
    response = client.generate(model="llama3.2", prompt=QUESTION, system="Be brief.",
                               options={"temperature": 0, "seed": 1})
    assert response.response == ANSWER
    assert (response.model, response.done, response.done_reason) == ("llama3.2", True, "stop")
    assert response.eval_count == len(ANSWER.split())
    assert client.show("llama3.2").details.format == "gguf"
    assert [m.model for m in client.list().models] == ["llama3.2"]
    emu.push_script("429:4")
    with pytest.raises(ollama.ResponseError) as limited:
        client.generate(model="llama3.2", prompt="q")
    assert limited.value.status_code == 429


def test_openai_client_parses_a_reply_of_n_choices(emu) -> None:
    client = openai.OpenAI(base_url=emu.base_url("openai"), api_key="sk-client-test", max_retries=0)
    completion = client.chat.completions.create(
        model="gpt-emu", messages=[{"role": "user", "content": QUESTION}], temperature=0.8, n=5)
    texts = [choice.message.content for choice in completion.choices]
    assert [choice.index for choice in completion.choices] == [0, 1, 2, 3, 4]
    assert len(set(texts)) == 5 and all(text.startswith(ANSWER.rstrip(".")) for text in texts)
    assert completion.usage.completion_tokens == sum(len(text.split()) for text in texts)


def test_google_genai_client_parses_a_reply_of_several_candidates(emu) -> None:
    client = genai.Client(api_key="gemini-client-test",
                          http_options=genai_types.HttpOptions(base_url=emu.url, api_version="v1beta"))
    response = client.models.generate_content(
        model="gemini-emu", contents=QUESTION,
        config=genai_types.GenerateContentConfig(temperature=0.8, candidate_count=3))
    texts = [candidate.content.parts[0].text for candidate in response.candidates]
    assert [candidate.index for candidate in response.candidates] == [0, 1, 2]
    assert len(set(texts)) == 3
    assert emu.requests[-1].body["generationConfig"]["candidateCount"] == 3
