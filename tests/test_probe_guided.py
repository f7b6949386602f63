"""The guided probe's pure parts (metrics/probe_guided.py): the split, the two instructions,
ROUGE-L against a hand-worked example, and the per-item scores."""

from __future__ import annotations

import pytest

from contam.metrics.bleu import bleu2
from contam.metrics.probe_guided import (
    METRICS, NOT_SPLITTABLE, GuidedProbe, rouge_l, split_question,
)
from contam.metrics.probes import ProbeItem

QUESTION = "Which Badge does Brock award after his defeat?"


def item(question: str = QUESTION) -> ProbeItem:
    return ProbeItem(item_id="red-01", title="Pokémon Red", subset="official", question=question,
                     reference="Boulder Badge")


def test_the_first_piece_is_the_first_half_of_the_words() -> None:
    assert split_question(QUESTION) == ("Which Badge does Brock", "award after his defeat?")
    assert split_question("Who created Pokémon Prism, exactly?") == ("Who created",
                                                                     "Pokémon Prism, exactly?")
    assert split_question("Why?") is None
    assert split_question("Why ?") is None  # the rest holds no word


def test_rouge_l_by_hand() -> None:
    """candidate "the cat sat on the mat" (6 tokens), reference "the cat is on the mat" (6):
    the longest common subsequence is the, cat, on, the, mat = 5; P = R = 5/6, F = 5/6.
    "the cat sat on mat" (5) against the same: LCS 4 (the cat on mat); P = 4/5, R = 4/6,
    F = 2 * 0.8 * 0.6667 / 1.4667 = 0.72727."""
    assert rouge_l("the cat sat on the mat", "the cat is on the mat") == pytest.approx(5 / 6)
    assert rouge_l("The cat sat on mat.", "the cat is on the mat") == pytest.approx(8 / 11)
    assert rouge_l("award after his defeat?", "award after his defeat") == 1.0
    assert rouge_l("Misty", "award after his defeat") == 0.0
    assert rouge_l("", "award") == rouge_l("...", "award") == 0.0


def test_rouge_l_is_order_sensitive_unlike_word_overlap() -> None:
    """Same words, reversed: the LCS is one token."""
    assert rouge_l("c b a", "a b c") == pytest.approx(1 / 3)


def test_guided_names_the_benchmark_and_general_does_not() -> None:
    guided, general = GuidedProbe(dataset="PokeQA", split="dev").prompts(item())
    assert (guided.variant, general.variant) == ("guided", "general")
    assert "dev split of the PokeQA dataset" in guided.user
    assert "dataset" not in general.user.lower() and "PokeQA" not in general.user
    for prompt in (guided, general):
        assert "FIRST PIECE:\nWhich Badge does Brock\n" in prompt.user
        assert "award" not in prompt.user  # the rest is what the model must produce
        assert "GAME: Pokémon Red\nANSWER: Boulder Badge" in prompt.user
        assert prompt.temperature == 0.0 and prompt.system == "" and prompt.samples == 1


def test_scores_are_guided_general_and_their_difference() -> None:
    probe = GuidedProbe()
    scores = {s.metric: s for s in probe.score(item(), {
        "guided": ["SECOND PIECE: award after his defeat?"], "general": ["award the player a badge?"]})}
    assert tuple(scores) == METRICS
    rest = "award after his defeat?"
    assert scores["rouge_l_guided"].value == 1.0  # the label is dropped
    assert scores["rouge_l_general"].value == pytest.approx(rouge_l("award the player a badge?", rest))
    assert scores["rouge_l_diff"].value == pytest.approx(1.0 - scores["rouge_l_general"].value)
    assert scores["bleu2_guided"].value == pytest.approx(bleu2(rest, rest))
    assert scores["bleu2_diff"].value == pytest.approx(
        bleu2(rest, rest) - bleu2("award the player a badge?", rest))
    assert scores["rouge_l_diff"].detail == {"rest": rest, "first_piece_words": 4}


def test_a_blank_completion_reproduced_nothing() -> None:
    scores = {s.metric: s.value for s in GuidedProbe().score(item(), {"guided": [" "],
                                                                     "general": ["award"]})}
    assert scores["rouge_l_guided"] == scores["bleu2_guided"] == 0.0
    assert scores["rouge_l_diff"] < 0


def test_an_unsplittable_question_is_not_probed() -> None:
    probe = GuidedProbe()
    assert probe.prompts(item("Why?")) == ()
    scores = probe.score(item("Why?"), {})
    assert [s.metric for s in scores] == list(METRICS)
    assert all(s.value is None and s.detail == {"reason": NOT_SPLITTABLE} for s in scores)


def test_params_and_validation() -> None:
    params = GuidedProbe(dataset="PokeQA").params()
    assert params["dataset"] == "PokeQA" and params["split"] == "test"
    assert GuidedProbe().params()["dataset"] == "contam"
    for bad in ({"dataset": " "}, {"split": ""}, {"max_output_tokens": 0}):
        with pytest.raises(ValueError):
            GuidedProbe(**bad)
