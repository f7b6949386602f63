"""Min-K% and Min-K%++: the scorer against hand-computed values and against the authors' reference
computation on a tiny random model; the local provider's token log-probabilities against a direct
torch computation; refusal of providers that cannot give them."""

from __future__ import annotations

import math

import anyio
import pytest

from contam.harness.config import ModelSpec
from contam.metrics.probe_mink import (
    DEFAULT_K, TEXT_RULE, check_k, lowest_count, min_k, min_k_pp, probe_params, probe_scores,
    scored_text, standardised,
)
from contam.metrics.probes import ProbeItem
from contam.providers.base import Fatal, TextLogprobs
from contam.providers.registry import provider_class
from tests.tiny_lm import reference_min_k_scores, tiny_model_folder

ITEM = ProbeItem(item_id="red-01", title=" Pokémon Red ", subset="official",
                 question="Which Badge does Brock award after his defeat? ", reference="Boulder Badge")
TEXTS = ["Pokémon Red\nWhich badge does Brock award after his defeat?\nBoulder Badge",
         "Pokémon Blue\nWho is the Gym Leader in Cerulean City?\nMisty, Cascade Badge"]


# -- the scorer, by hand ------------------------------------------------------------------------

def test_min_k_averages_the_lowest_floor_n_k_log_probabilities():
    logprobs = [-1.0, -7.0, -2.0, -9.0, -3.0, -4.0, -10.0, -5.0, -6.0, -8.0]
    assert min_k(logprobs, 0.2) == -9.5  # floor(10 * 0.2) = 2: -10 and -9
    assert min_k(logprobs, 0.25) == -9.5  # floor(2.5) = 2
    assert min_k(logprobs, 0.3) == -9.0  # -10, -9, -8
    assert min_k(logprobs, 1.0) == -5.5  # every token
    assert DEFAULT_K == 0.2


def test_too_few_tokens_for_one_in_the_lowest_k_has_no_score():
    assert lowest_count(4, 0.2) == 0 and min_k([-1.0, -2.0, -3.0, -4.0]) is None
    assert lowest_count(5, 0.2) == 1 and min_k([-1.0, -2.0, -3.0, -4.0, -5.0]) == -5.0
    assert min_k([]) is None


def test_min_k_pp_standardises_each_token_before_taking_the_lowest():
    logprobs, means, stds = [-1.0, -2.0, -3.0, -4.0, -5.0], [-1.0] * 5, [2.0] * 5
    assert standardised(logprobs, means, stds) == [0.0, -0.5, -1.0, -1.5, -2.0]
    assert min_k_pp(logprobs, means, stds, 0.4) == -1.75
    # Standardising reorders: a low log p under a flat distribution is not surprising.
    assert min_k_pp([-5.0, -1.0], [-5.0, -0.5], [1.0, 0.25], 0.5) == -2.0


def test_a_distribution_without_spread_standardises_to_zero():
    assert standardised([0.0, -1.0], [0.0, -2.0], [0.0, 1.0]) == [0.0, 1.0]


def test_mismatched_lengths_and_bad_k_are_refused():
    with pytest.raises(ValueError, match="one value per scored token"):
        standardised([-1.0, -2.0], [-1.0], [1.0, 1.0])
    for bad in (0, -0.1, 1.5, math.nan, "0.2"):
        with pytest.raises(ValueError, match=r"fraction in \(0, 1\]"):
            check_k(bad)


def test_the_scored_text_joins_title_question_and_reference_by_newlines():
    assert scored_text(ITEM) == ("Pokémon Red\nWhich Badge does Brock award after his defeat?\n"
                                 "Boulder Badge")
    assert "'\\n'" in TEXT_RULE


def test_scores_rows_carry_counts_and_min_k_pp_only_with_the_distribution():
    scored = TextLogprobs(tokens=("a",) * 6, logprobs=(-1.0, -2.0, -3.0, -4.0, -5.0, -6.0),
                          means=(-1.0,) * 6, stds=(1.0,) * 6)
    rows = {row.metric: row for row in probe_scores(scored, 0.2)}
    assert rows["min_k"].value == -6.0 and rows["min_k_pp"].value == -5.0
    assert rows["min_k"].detail == {"tokens": 6, "lowest": 1}
    server = TextLogprobs(tokens=("a",) * 3, logprobs=(-1.0, -2.0, -3.0))
    [only] = probe_scores(server, 0.2)
    assert (only.metric, only.value) == ("min_k", None)
    assert "fewer scored tokens than 1/k" in only.detail["why_null"]


def test_params_name_the_source_and_what_it_allows():
    local, server = probe_params(0.2, "forward"), probe_params(0.2, "prompt_logprobs")
    assert local["metrics"] == ["min_k", "min_k_pp"] and server["metrics"] == ["min_k"]
    assert "Min-K%++ is not computed" in server["method"]
    assert local["k"] == server["k"] == 0.2 and local["text"] == TEXT_RULE
    with pytest.raises(ValueError, match="unknown log-probability source"):
        probe_params(0.2, "guess")


# -- against the authors' computation on a tiny random model ------------------------------------

@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return tiny_model_folder(tmp_path_factory.mktemp("tiny") / "tiny-lm")


@pytest.fixture(scope="module")
def tiny_provider(tiny_folder):
    from contam.providers.local import LocalProvider

    return LocalProvider(ModelSpec(name="tiny", provider="local", model=str(tiny_folder),
                                   params={"device": "cpu"}))


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("k", [0.2, 0.5, 1.0])
def test_scores_equal_the_reference_code_on_a_tiny_model(tiny_folder, tiny_provider, text, k):
    ref_min_k, ref_min_k_pp, n = reference_min_k_scores(tiny_folder, text, k)
    scored = anyio.run(tiny_provider.text_logprobs, text)
    assert len(scored.logprobs) == len(scored.tokens) == n == scored.input_tokens - 1
    assert min_k(scored.logprobs, k) == pytest.approx(ref_min_k, abs=1e-5)
    pp = min_k_pp(scored.logprobs, scored.means, scored.stds, k)
    assert pp == pytest.approx(ref_min_k_pp, abs=1e-5)


def test_local_log_probabilities_equal_a_direct_torch_computation(tiny_folder, tiny_provider):
    """Each token's log p, and mu and sigma as plain sums over the vocabulary in float64."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_folder).eval()
    ids = AutoTokenizer.from_pretrained(tiny_folder).encode(TEXTS[1])
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].double()
    scored = anyio.run(tiny_provider.text_logprobs, TEXTS[1])
    for position, token in enumerate(ids[1:]):
        log_p = logits[position] - torch.logsumexp(logits[position], dim=0)
        p = log_p.exp()
        mu = float((p * log_p).sum())
        sigma = math.sqrt(float((p * (log_p - mu) ** 2).sum()))
        assert scored.logprobs[position] == pytest.approx(float(log_p[token]), abs=1e-5)
        assert (scored.means[position], scored.stds[position]) == pytest.approx((mu, sigma), abs=1e-5)
    assert scored.tokens[:3] == ("blue", "who", "is")  # word-level tokens, the first unscored
    assert scored.served_model == "tiny-lm" == tiny_provider.served_model_id()


def test_a_model_without_chat_template_is_scored_but_not_asked(tiny_provider):
    from contam.harness.prompts import question_request

    assert anyio.run(tiny_provider.text_logprobs, "pokémon red").logprobs  # one scored token
    with pytest.raises(Fatal, match="no chat template"):
        anyio.run(tiny_provider.generate, question_request("Be brief.", "Pokémon Red", "Who?"))


# -- who can give log-probabilities -------------------------------------------------------------

@pytest.mark.parametrize("provider, base_url", [
    ("gemini", None), ("anthropic", None), ("ollama", None), ("openai", None),
    ("openai", "https://api.openai.com/v1"), ("openai", "https://my-org.openai.azure.com/openai/v1"),
])
def test_providers_without_prompt_log_probabilities_are_refused_in_one_line(provider, base_url):
    spec = ModelSpec(name="m", provider=provider, model="x", base_url=base_url)
    refusal = provider_class(spec).text_logprobs_refusal(spec)
    assert refusal and "\n" not in refusal and "'m'" in refusal


@pytest.mark.parametrize("provider, base_url", [
    ("local", None), ("openai", "http://gpu-node:8000/v1"), ("openai", "http://127.0.0.1:9/v1"),
])
def test_local_models_and_other_openai_compatible_servers_are_not_refused(provider, base_url):
    model = str(__file__) if provider == "local" else "x"
    spec = ModelSpec(name="m", provider=provider, model=model, base_url=base_url)
    assert provider_class(spec).text_logprobs_refusal(spec) is None


def test_texts_scored_at_once_share_forward_passes_and_score_as_alone(tiny_provider, monkeypatch):
    """min-k's texts waiting together go in one padded forward pass (as generation batches), and
    each text's values are those it gets alone."""
    import contam.providers.local as local

    alone = [anyio.run(tiny_provider.text_logprobs, text) for text in TEXTS]
    batches = []
    real = local.texts_logprobs_blocking
    monkeypatch.setattr(local, "texts_logprobs_blocking",
                        lambda model, tok, texts, **kw: batches.append(len(texts)) or real(model, tok, texts, **kw))

    async def all_at_once():
        found = {}
        async with anyio.create_task_group() as group:
            for n, text in enumerate(TEXTS):
                async def score(n=n, text=text):
                    found[n] = await tiny_provider.text_logprobs(text)
                group.start_soon(score)
        return [found[n] for n in range(len(TEXTS))]

    together = anyio.run(all_at_once)
    assert len(batches) < len(TEXTS) and sum(batches) == len(TEXTS)
    for one, batched in zip(alone, together):
        assert batched.tokens == one.tokens and batched.input_tokens == one.input_tokens
        assert batched.logprobs == pytest.approx(one.logprobs, abs=1e-5)
        assert batched.means == pytest.approx(one.means, abs=1e-5)
        assert batched.stds == pytest.approx(one.stds, abs=1e-5)


def test_a_text_that_fails_fails_alone_in_its_batch(tiny_provider, monkeypatch):
    import contam.providers.local as local

    real = local.texts_logprobs_blocking

    def refusing(model, tok, texts, **kw):
        if any("refuse" in text for text in texts):
            raise RuntimeError("too long for the context")
        return real(model, tok, texts, **kw)

    monkeypatch.setattr(local, "texts_logprobs_blocking", refusing)

    async def both():
        outcomes = {}
        async with anyio.create_task_group() as group:
            for text in (TEXTS[0], "refuse this one", TEXTS[1]):
                async def score(text=text):
                    try:
                        outcomes[text] = await tiny_provider.text_logprobs(text)
                    except Fatal as exc:
                        outcomes[text] = exc
                group.start_soon(score)
        return outcomes

    outcomes = anyio.run(both)
    assert isinstance(outcomes["refuse this one"], Fatal)
    assert "scoring failed: too long for the context" in str(outcomes["refuse this one"])
    assert isinstance(outcomes[TEXTS[0]], TextLogprobs) and isinstance(outcomes[TEXTS[1]], TextLogprobs)
