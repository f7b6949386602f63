"""The local provider samples: temperature, top-p and a seed (a generator per sample, so results
repeat), several samples per request, and a probe that samples (cdd) runs on a local model. On a
tiny random Llama with a chat template (tests.tiny_lm), so each test takes well under a second of
model time."""

from __future__ import annotations

import anyio
import pytest

from contam.harness.config import ModelSpec
from contam.harness.store import Store
from contam.providers.base import Fatal, Request
from contam.providers.local import LocalProvider
from tests.probekit import demo_config, probe_inprocess
from tests.tiny_lm import tiny_model_folder

QUESTION = Request(system="who is the gym leader ?", user="what badge does brock award ?",
                   max_output_tokens=10)


@pytest.fixture(scope="module")
def tiny_chat(tmp_path_factory):
    return tiny_model_folder(tmp_path_factory.mktemp("tiny") / "tiny-chat", chat=True)


def local(folder, **params) -> LocalProvider:
    return LocalProvider(ModelSpec(name="tiny", provider="local", model=str(folder),
                                   params={"device": "cpu", "max_sentences": 0, **params}))


def sampled(samples: int = 6, temperature: float = 1.0, **fields) -> Request:
    return Request(system=QUESTION.system, user=QUESTION.user, max_output_tokens=10,
                   temperature=temperature, samples=samples, **fields)


def texts(provider: LocalProvider, request: Request) -> tuple[str, ...]:
    return tuple(text for text, _ in anyio.run(provider.generate, request).completions())


# -- parameters ----------------------------------------------------------------------------------

@pytest.mark.parametrize("params, message", [
    ({"temperature": -0.5}, "temperature must be a number >= 0"),
    ({"temperature": "hot"}, "temperature must be a number >= 0"),
    ({"top_p": 0}, "top_p must be a number in (0, 1]"),
    ({"top_p": 1.5}, "top_p must be a number in (0, 1]"),
    ({"seed": 1.5}, "seed must be a whole number"),
    ({"batch_size": 0}, "batch_size must be a whole number >= 1"),
    ({"tools": []}, "params key 'tools' is not supported"),
])
def test_bad_sampling_params_are_refused_in_one_line(tiny_chat, params, message):
    with pytest.raises(Fatal) as caught:
        local(tiny_chat, **params)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_sampling_config_is_accepted(tiny_chat):
    provider = local(tiny_chat, temperature=0.7, top_p=0.9, seed=3, batch_size=4)
    assert (provider.sampling.temperature, provider.sampling.top_p, provider.sampling.seed) == (0.7, 0.9, 3)


# -- sampling ------------------------------------------------------------------------------------

def test_samples_repeat_with_the_seed_and_differ_between_seeds_and_samples(tiny_chat):
    first, again = texts(local(tiny_chat), sampled()), texts(local(tiny_chat), sampled())
    other_seed = texts(local(tiny_chat, seed=1), sampled())
    assert len(first) == 6 and first == again
    assert other_seed != first
    assert len(set(first)) > 1  # six draws at temperature 1 from a random model: not all alike


def test_a_sample_is_the_same_however_the_samples_are_split_into_requests(tiny_chat):
    provider = local(tiny_chat)
    whole = texts(provider, sampled())
    parts = [texts(provider, sampled(samples=len(n), sample_numbers=n)) for n in ((0, 1), (2,), (3, 4, 5))]
    assert sum(parts, ()) == whole
    reply = anyio.run(provider.generate, sampled())
    assert reply.output_tokens > len(reply.texts) and reply.input_tokens > 5
    assert all(reason in ("stop", "length") for reason in reply.finish_reasons)


def test_temperature_zero_and_a_tiny_nucleus_both_give_the_greedy_answer(tiny_chat):
    greedy = texts(local(tiny_chat), QUESTION)
    assert texts(local(tiny_chat), sampled(samples=3, temperature=0.0)) == greedy * 3
    assert texts(local(tiny_chat, top_p=1e-9), sampled(samples=3)) == greedy * 3


def test_the_configured_temperature_applies_to_a_plain_question(tiny_chat):
    configured = texts(local(tiny_chat, temperature=1.0, seed=7), QUESTION)
    asked = texts(local(tiny_chat, seed=7), sampled(samples=1, temperature=1.0))
    assert configured == asked != texts(local(tiny_chat), QUESTION)


def test_top_p_draws_only_from_the_nucleus():
    import torch

    from contam.providers.local_generate import Sampling, _draw

    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    generator = torch.Generator().manual_seed(0)
    drawn = {_draw(logits, Sampling(temperature=1.0, top_p=0.7), generator) for _ in range(300)}
    assert drawn == {0, 1}  # 0.5 + 0.3 holds 0.7; the rest is cut
    everything = {_draw(logits, Sampling(temperature=1.0), generator) for _ in range(300)}
    assert everything == {0, 1, 2, 3}


# -- a probe that samples ------------------------------------------------------------------------

def test_cdd_runs_on_a_local_model_with_its_samples_in_one_request(tmp_path, tiny_chat):
    config = demo_config(tmp_path, [{"name": "tiny", "provider": "local", "model": str(tiny_chat),
                                     "params": {"device": "cpu", "max_new_tokens": 6}}])
    run = probe_inprocess(config, tmp_path / "s.duckdb", limit=2, parameters={"samples": 5})
    assert run.status == 0, run.out + run.err
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        per_request = sorted(len(row[0]) for row in store.query(
            "SELECT samples FROM attempts WHERE outcome = 'ok'"))
        samples = store.query("SELECT variant, count(*), count(DISTINCT text_raw) FROM probe_samples "
                              "GROUP BY 1 ORDER BY 1")
        scored = store.count("probe_scores")
    assert per_request == [1, 1, 5, 5]  # per item: the greedy answer, then the 5 samples at once
    assert samples[0][:2] == ("greedy", 2) and samples[1][:2] == ("sample", 10)
    assert samples[1][2] > 2  # sampled, not the greedy answer ten times
    assert scored > 0


@pytest.mark.parametrize("kind", ["ts-guess", "guided"])
def test_the_other_generation_probes_run_on_a_local_model(tmp_path, tiny_chat, kind):
    config = demo_config(tmp_path, [{"name": "tiny", "provider": "local", "model": str(tiny_chat),
                                     "params": {"device": "cpu", "max_new_tokens": 6}}])
    run = probe_inprocess(config, tmp_path / "s.duckdb", kind, limit=2)
    assert run.status == 0, run.out + run.err
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        assert store.count("probe_samples") > 0 and store.count("probe_scores") > 0


@pytest.mark.slow
def test_the_local_probes_example_runs_cdd_and_repeats_its_samples(tmp_path, contam):
    """examples/local-probes.toml on the packaged SmolLM2: cdd in two stores gives the same
    samples (seeded per sample), batched over the lane's workers."""
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / "local-probes.toml"
    stores = [tmp_path / "a.duckdb", tmp_path / "b.duckdb"]
    for store in stores:
        status, out, err = contam("probe", "cdd", example, "--store", store, "--samples", 3,
                                  "--limit", 2, "--no-progress")
        assert status == 0, out + err
    samples = []
    for store in stores:
        with Store(store, read_only=True) as opened:
            samples.append(opened.query("SELECT item_id, variant, sample, text_raw FROM probe_samples "
                                        "ORDER BY ALL"))
    assert samples[0] == samples[1] and len(samples[0]) == 2 * (1 + 3)
    assert all(text.strip() for *_, text in samples[0])
