"""cdd's arithmetic against hand-worked examples: tokens, edit distances, the length they are
measured against, peakedness as a fraction, and the flag; its prompts and parameters."""

from __future__ import annotations

import pytest

from contam.metrics.probe_cdd import COMPARED_TOKENS, CDDProbe, peakedness, tokens
from contam.metrics.probe_registry import PROBES, ProbeContext, build_probe
from contam.metrics.probes import ProbeItem, params_sha256

CONTEXT = ProbeContext(system_prompt="Answer from memory.",
                       question_template="Game: {title}\nQuestion: {question}")
ITEM = ProbeItem(item_id="red-01", title="Pokémon Red", subset="official",
                 question="Which Badge does Brock award?", reference="Boulder Badge")


def probe(**options) -> CDDProbe:
    return build_probe("cdd", CONTEXT, options)


def test_tokens_are_words_and_single_punctuation_marks_case_kept():
    assert tokens("the Boulder Badge, TM34!") == ["the", "Boulder", "Badge", ",", "TM34", "!"]
    assert tokens("  ") == []
    assert len(tokens("word " * 150)) == COMPARED_TOKENS


def test_peakedness_is_the_fraction_of_samples_within_alpha_times_the_longest_length():
    # greedy: 3 tokens. Samples: identical (d=0); one word swapped (d=1); "a Boulder Badge ."
    # (4 tokens: the->a, + ".": d=2); "Brock gives TM34" (every token swapped: d=3).
    greedy = "the Boulder Badge"
    samples = ["the Boulder Badge", "the Cascade Badge", "a Boulder Badge.", "Brock gives TM34"]
    wide = peakedness(greedy, samples, alpha=0.25)  # l = 4 (the 4-token sample): threshold 1
    assert (wide.distances, wide.max_length, wide.threshold) == ([0, 1, 2, 3], 4, 1.0)
    assert wide.peakedness == 0.5  # d = 0 and d = 1 of four samples
    narrow = peakedness(greedy, samples, alpha=0.05)  # threshold 0.2: only the identical one
    assert narrow.peakedness == 0.25


def test_flagged_when_peakedness_exceeds_xi():
    samples = {"greedy": ["the Boulder Badge"],
               "sample": ["the Boulder Badge", "the Cascade Badge", "a Boulder Badge.", "Brock gives TM34"]}
    scores = {s.metric: s for s in probe(alpha=0.05, xi=0.2).score(ITEM, samples)}
    assert scores["peakedness"].value == 0.25 and scores["flagged"].value == 1.0
    assert scores["peakedness"].detail["distances"] == [0, 1, 2, 3]
    scores = {s.metric: s for s in probe(alpha=0.05, xi=0.3).score(ITEM, samples)}
    assert scores["flagged"].value == 0.0


def test_one_close_sample_in_twenty_is_a_fraction_not_a_count():
    """LLMSanitize compares the count of close samples (1) with xi; the paper's fraction is
    1/20 = 0.05: at xi = 0.1 the item is not flagged here (it would be there)."""
    samples = {"greedy": ["Boulder Badge"],
               "sample": ["Boulder Badge"] + [f"something else entirely {n}" for n in range(19)]}
    scores = {s.metric: s.value for s in probe(xi=0.1).score(ITEM, samples)}
    assert scores == {"peakedness": 0.05, "flagged": 0.0}
    assert {s.metric: s.value for s in probe(xi=0.01).score(ITEM, samples)}["flagged"] == 1.0


def test_every_text_empty_is_not_scored_rather_than_perfectly_peaked():
    scores = {s.metric: s.value for s in probe().score(ITEM, {"greedy": [""], "sample": ["", " "]})}
    assert scores == {"peakedness": None, "flagged": None}


def test_a_blank_greedy_answer_leaves_the_cell_null_with_the_reason():
    """Blank samples are 'close' to a blank greedy answer: before, some of them flagged the cell."""
    from contam.metrics.probe_cdd import BLANK_GREEDY

    for samples in (["", "", "Brock"], ["Boulder Badge", ""], ["\n"] * 20):
        scores = {s.metric: s for s in probe().score(ITEM, {"greedy": ["  "], "sample": samples})}
        assert (scores["peakedness"].value, scores["flagged"].value) == (None, None)
        assert scores["peakedness"].detail["reason"] == scores["flagged"].detail["reason"] == BLANK_GREEDY
    scored = {s.metric: s for s in probe().score(ITEM, {"greedy": ["Brock"], "sample": ["", "Brock"]})}
    assert scored["peakedness"].value == 0.5 and "reason" not in scored["peakedness"].detail


def test_prompts_are_the_studys_question_greedy_once_and_n_samples_at_t():
    greedy, sampled = probe(samples=7, temperature=0.6).prompts(ITEM)
    assert (greedy.variant, greedy.samples, greedy.temperature) == ("greedy", 1, 0.0)
    assert (sampled.variant, sampled.samples, sampled.temperature) == ("sample", 7, 0.6)
    assert greedy.user == sampled.user == "Game: Pokémon Red\nQuestion: Which Badge does Brock award?"
    assert greedy.system == "Answer from memory." and greedy.max_output_tokens == 128


def test_defaults_and_params_are_recorded_and_hashed():
    default = probe()
    assert (default.samples, default.temperature, default.alpha, default.xi) == (20, 0.8, 0.05, 0.01)
    params = default.params()
    assert params["system"] == CONTEXT.system_prompt and params["compared_tokens"] == 100
    assert params_sha256("cdd", params) != params_sha256("cdd", probe(samples=19).params())


@pytest.mark.parametrize("options, message", [
    ({"samples": 0}, "--samples"), ({"temperature": 0.0}, "--temperature"),
    ({"alpha": 1.5}, "--alpha"), ({"xi": 1.0}, "--xi"), ({"nope": 1}, "no parameter 'nope'")])
def test_bad_parameters_are_refused_in_one_line(options, message):
    with pytest.raises(ValueError, match=message):
        probe(**options)


def test_the_registry_names_cdd_and_its_flags():
    assert [o.flag for o in PROBES["cdd"].options] == [
        "--samples", "--temperature", "--alpha", "--xi", "--max-output-tokens"]
    with pytest.raises(ValueError, match="unknown probe"):
        build_probe("nope", CONTEXT, {})
