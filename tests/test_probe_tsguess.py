"""The ts-guess probe's pure parts (metrics/probe_tsguess.py): the masking rule, the prompt, the
normalisation and the exact-match score."""

from __future__ import annotations

import unicodedata

import pytest
from wordfreq import zipf_frequency

from contam.metrics.probe_tsguess import (
    MASK, NO_ELIGIBLE_WORD, RULE, TsGuessProbe, choose_slot, exact_match, mask_question, normalise,
)
from contam.metrics.probes import ProbeItem


def item(question: str, title: str = "Pokémon Red", subset: str = "official") -> ProbeItem:
    return ProbeItem(item_id="x1", title=title, subset=subset, question=question,
                     reference="Boulder Badge")


def test_the_rarest_content_word_is_masked() -> None:
    slot = choose_slot("Which Badge does Brock award after his defeat?", "Pokémon Red")
    # Brock 3.71 < Badge 4.02 < defeat 4.51 < award 4.88; which/does/after/his are stop words
    assert slot.word == "Brock"
    assert slot.zipf == zipf_frequency("Brock", "en") == min(
        zipf_frequency(w, "en") for w in ("Badge", "Brock", "award", "defeat"))


def test_title_words_are_never_masked_even_when_rarest() -> None:
    question = "In which region is Pokémon Brown set?"
    assert zipf_frequency("Pokémon", "en") < zipf_frequency("region", "en")
    assert choose_slot(question, "Pokémon Brown").word == "region"
    assert choose_slot(question, "Another Game").word == "Pokémon"


def test_ties_go_to_the_first_word_and_its_first_occurrence_is_masked() -> None:
    assert zipf_frequency("qwzx", "en") == zipf_frequency("vbnm", "en") == 0.0
    question = "Is the vbnm before the qwzx or the vbnm?"
    slot = choose_slot(question, "T")
    assert (slot.word, slot.start) == ("vbnm", question.index("vbnm"))
    assert mask_question(question, slot) == "Is the [MASK] before the qwzx or the vbnm?"


def test_numbers_and_single_letters_are_not_eligible_but_mixed_tokens_are() -> None:
    assert choose_slot("Which year, 1996 or 1998, saw the release?", "T").word == "release"
    assert choose_slot("Which TM34 is given in 1996?", "T").word == "TM34"
    assert choose_slot("Is X in 1996 or in 1998 the one?", "T").word == "one"


def test_a_possessive_is_one_word() -> None:
    slot = choose_slot("Which TM does Brock's rival give?", "Pokémon Red")
    assert slot.word == "Brock's"
    assert mask_question("Which TM does Brock's rival give?", slot) == "Which TM does [MASK] rival give?"


def test_an_item_without_an_eligible_word_is_not_probed_and_scored_null_with_the_reason() -> None:
    probe = TsGuessProbe()
    lone = item("Was it in 1996?", title="It")
    assert choose_slot(lone.question, lone.title) is None
    assert probe.prompts(lone) == ()
    (score,) = probe.score(lone, {})
    assert score.value is None and score.detail == {"rule": RULE, "reason": NO_ELIGIBLE_WORD}


def test_the_prompt_masks_the_word_and_keeps_the_rest() -> None:
    probe = TsGuessProbe()
    (prompt,) = probe.prompts(item("Which Badge does Brock award after his defeat?"))
    assert prompt.variant == "masked" and prompt.system == "" and prompt.temperature == 0.0
    assert prompt.user == ("Complete the sentence in one word:\n\n"
                           f"Which Badge does {MASK} award after his defeat?\n"
                           "Hint: Pokémon Red\nReply the answer only.")


def test_normalisation_case_nfc_punctuation_whitespace() -> None:
    decomposed = unicodedata.normalize("NFD", "Pokémon")
    assert decomposed != "Pokémon" and normalise(decomposed) == normalise("POKÉMON") == "pokémon"
    assert normalise(' “Badge.” ') == "badge"
    assert normalise("Brock’s") == normalise("Brocks") == "brocks"
    assert normalise("  two\n words ") == "two words"


@pytest.mark.parametrize(("reply", "hit"), [
    ("Brock", True), ("brock.", True), ("**Brock**", True), ("\"Brock\"", True),  # * is Po
    ("Brock's", False), ("The answer is Brock", False), ("", False), ("Misty", False),
])
def test_exact_match_wants_the_word_alone(reply: str, hit: bool) -> None:
    assert exact_match(reply, "Brock") is hit


def test_score_stores_the_word_its_zipf_and_the_rule() -> None:
    probe = TsGuessProbe()
    question = item("Which Badge does Brock award after his defeat?")
    (hit,) = probe.score(question, {"masked": ["Brock."]})
    (miss,) = probe.score(question, {"masked": ["Misty"]})
    assert (hit.metric, hit.value, miss.value) == ("exact_match", 1.0, 0.0)
    assert hit.detail == {"rule": RULE, "word": "Brock", "zipf": zipf_frequency("Brock", "en"),
                          "position": question.question.index("Brock"), "reply": "brock"}
    assert miss.detail["reply"] == "misty"


def test_params_record_the_rule_template_and_limits() -> None:
    params = TsGuessProbe(max_output_tokens=8).params()
    assert params["rule"] == RULE and params["max_output_tokens"] == 8
    assert "{masked}" in params["template"] and params["wordfreq"]
    assert TsGuessProbe().params() != params
    with pytest.raises(ValueError, match="max-output-tokens"):
        TsGuessProbe(max_output_tokens=0)


@pytest.mark.parametrize(("reply", "fill"), [
    ("empty", True), ("Empty.", True), ("the empty one", True), ("New York", True),
    ("river quellan flows into the shallow lake marrowby", False), ("", False), ("...", False),
    ("It is the empty lake", False),
])
def test_a_reply_is_a_fill_when_it_is_a_few_words_at_most(reply, fill):
    from contam.metrics.probe_tsguess import is_fill

    assert is_fill(reply) is fill


def test_a_model_fills_masks_when_at_least_half_its_replies_are_fills():
    from contam.metrics.probe_tsguess import fills_masks

    answer = "river quellan flows into the shallow lake marrowby"
    assert fills_masks(["empty", "lake", answer, answer])
    assert not fills_masks(["empty", answer, answer])
    assert fills_masks([])
