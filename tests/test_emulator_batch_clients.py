"""Faithfulness of the emulator's batch APIs: the official openai, anthropic and google-genai
clients create, poll and read batch jobs against it (they validate every reply with their own
models), so contam's batch protocols are tested against shapes the real clients accept."""

from __future__ import annotations

import json
import time

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from contam.harness.emulator.server import default_answer

QUESTION = "Game: Pokemon Gold\nQuestion: Which region follows Johto?"
ANSWER = default_answer(QUESTION)


@pytest.fixture
def emu(emulator):
    return emulator(batch_processing_s=0.2)


def _until(check, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value is not None:
            return value
        time.sleep(0.05)
    raise AssertionError("the job did not end")


def test_openai_client_runs_a_batch(emu) -> None:
    client = openai.OpenAI(base_url=emu.base_url("openai"), api_key="sk-client-test", max_retries=0)
    line = {"custom_id": "cell-1", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "gpt-emu", "messages": [{"role": "user", "content": QUESTION}]}}
    uploaded = client.files.create(file=("in.jsonl", json.dumps(line).encode()), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                  completion_window="24h", metadata={"contam_tag": "t1"})
    assert (batch.status, batch.metadata) == ("in_progress", {"contam_tag": "t1"})
    done = _until(lambda: (b := client.batches.retrieve(batch.id)).status == "completed" and b or None)
    assert done.request_counts.completed == 1
    output = [json.loads(raw) for raw in client.files.content(done.output_file_id).text.splitlines()]
    assert output[0]["custom_id"] == "cell-1"
    assert output[0]["response"]["body"]["choices"][0]["message"]["content"] == ANSWER
    assert [b.id for b in client.batches.list()] == [batch.id]
    assert client.batches.cancel(batch.id).status == "completed"  # too late to cancel


def test_anthropic_client_runs_a_message_batch(emu) -> None:
    client = anthropic.Anthropic(base_url=emu.url, api_key="anthropic-client-test", max_retries=0)
    batch = client.messages.batches.create(requests=[{"custom_id": "cell-1", "params": {
        "model": "claude-emu", "max_tokens": 64, "messages": [{"role": "user", "content": QUESTION}]}}])
    assert batch.processing_status == "in_progress" and batch.results_url is None
    done = _until(lambda: (b := client.messages.batches.retrieve(batch.id)).processing_status == "ended"
                  and b or None)
    assert done.request_counts.succeeded == 1
    results = list(client.messages.batches.results(batch.id))
    assert results[0].custom_id == "cell-1" and results[0].result.type == "succeeded"
    assert results[0].result.message.content[0].text == ANSWER
    assert [b.id for b in client.messages.batches.list()] == [batch.id]


def test_google_genai_client_runs_a_batch(emu) -> None:
    client = genai.Client(api_key="gemini-client-test",
                          http_options=genai_types.HttpOptions(base_url=emu.url, api_version="v1beta"))
    job = client.batches.create(
        model="gemini-emu", src=[{"contents": [{"role": "user", "parts": [{"text": QUESTION}]}],
                                  "metadata": {"key": "cell-1"}}],
        config={"display_name": "contam:run:key"})
    assert job.display_name == "contam:run:key" and job.state == genai_types.JobState.JOB_STATE_RUNNING
    done = _until(lambda: (j := client.batches.get(name=job.name)).done and j or None)
    assert done.state == genai_types.JobState.JOB_STATE_SUCCEEDED
    response = done.dest.inlined_responses[0]
    assert response.response.text == ANSWER and response.metadata == {"key": "cell-1"}
    assert [j.name for j in client.batches.list()] == [job.name]


def test_google_genai_client_runs_a_batch_from_an_uploaded_file(emu) -> None:
    import io

    client = genai.Client(api_key="gemini-client-test",
                          http_options=genai_types.HttpOptions(base_url=emu.url, api_version="v1beta"))
    line = {"key": "cell-1", "request": {"contents": [{"role": "user", "parts": [{"text": QUESTION}]}]}}
    uploaded = client.files.upload(file=io.BytesIO(json.dumps(line).encode()),
                                   config={"mime_type": "jsonl", "display_name": "requests"})
    assert uploaded.name.startswith("files/")
    job = client.batches.create(model="gemini-emu", src=uploaded.name)
    done = _until(lambda: (j := client.batches.get(name=job.name)).done and j or None)
    assert done.dest.file_name.startswith("files/")
    results = [json.loads(raw) for raw in client.files.download(file=done.dest.file_name).splitlines()]
    assert results[0]["key"] == "cell-1"
    assert results[0]["response"]["candidates"][0]["content"]["parts"][0]["text"] == ANSWER
