"""``ts-guess``: Testset Slot Guessing, question-based (Deng et al. 2023, arXiv 2311.09783).

Design notes: ARCHITECTURE.md, Probe: ts-guess.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any, ClassVar

from contam.metrics.probes import ProbeContext, ProbeItem, ProbePrompt, ProbeScore

__all__ = ["build", "TsGuessProbe", "Slot", "choose_slot", "mask_question", "normalise", "exact_match",
           "masked_prompt", "is_fill", "fills_masks", "RULE", "TEMPLATE", "MASK", "STOP_WORDS",
           "NO_ELIGIBLE_WORD", "MAX_FILL_WORDS", "NOT_A_FILLER"]

RULE = "rarest-content-word:wordfreq-zipf-en:no-stopword-number-or-title-word:first-on-tie"
MASK = "[MASK]"
TEMPLATE = "Complete the sentence in one word:\n\n{masked}\nHint: {title}\nReply the answer only."
NORMALISATION = "NFC, casefold, punctuation (Unicode P*) removed, whitespace collapsed"
# A fill is the masked word, or a short phrase in its place; a model that answers the question
# instead ("river quellan flows into the shallow lake marrowby") cannot match, whatever it saw.
MAX_FILL_WORDS = 3
NOT_A_FILLER = "not applicable on this model: it does not fill masks"
NO_ELIGIBLE_WORD = "no eligible word: every word is a stop word, a number, one letter or a title word"

# English function words: never the slot (articles, pronouns, prepositions, conjunctions,
# auxiliaries and question words), since guessing them says nothing about memorisation.
STOP_WORDS = frozenset("""
a an the this that these those some any each every no all both either neither another other such
i me my mine we us our ours you your yours he him his she her hers it its they them their theirs
what which who whom whose when where why how whether
is am are was were be been being do does did done doing have has had having
can could may might must shall should will would ought
of in on at to for from by with about against between into through during before after above
below up down out off over under again further then once than as until while upon within without
along across behind beyond around among toward towards onto via per
and or but nor so yet if because though although unless since
not only own same too very just also there here
""".split())

_WORD = re.compile(r"\w+(?:['’-]\w+)*")


@dataclass(frozen=True)
class Slot:
    """The masked word: its wording in the question, where it is, how rare it is."""

    word: str
    start: int
    end: int
    zipf: float


def _zipf(word: str) -> float:
    from wordfreq import zipf_frequency  # its word lists load on first use (~0.4 s)

    return zipf_frequency(word, "en")


def _fold(word: str) -> str:
    return unicodedata.normalize("NFC", word).casefold()


def _eligible(word: str, title_words: set[str]) -> bool:
    folded = _fold(word)
    return (len(folded) > 1 and any(ch.isalpha() for ch in folded)
            and folded not in STOP_WORDS and folded not in title_words)


def choose_slot(question: str, title: str) -> Slot | None:
    """The word :data:`RULE` masks in ``question``, or None when no word is eligible."""
    title_words = {_fold(m.group()) for m in _WORD.finditer(title)}
    candidates = [m for m in _WORD.finditer(question) if _eligible(m.group(), title_words)]
    if not candidates:
        return None
    ranked = [(_zipf(m.group()), position, m) for position, m in enumerate(candidates)]
    zipf, _, match = min(ranked, key=lambda entry: entry[:2])
    return Slot(word=match.group(), start=match.start(), end=match.end(), zipf=zipf)


def mask_question(question: str, slot: Slot) -> str:
    return f"{question[:slot.start]}{MASK}{question[slot.end:]}"


def masked_prompt(item: ProbeItem, slot: Slot) -> str:
    return TEMPLATE.format(masked=mask_question(item.question, slot), title=item.title)


def normalise(text: str) -> str:
    """:data:`NORMALISATION`, the comparison of a reply with the masked word."""
    folded = unicodedata.normalize("NFC", text).casefold()
    kept = "".join(ch for ch in folded if not unicodedata.category(ch).startswith("P"))
    return " ".join(kept.split())


def is_fill(reply: str) -> bool:
    """Whether a reply (as stored: :func:`normalise`'d) could be a fill of the mask: at least one
    word character, and at most :data:`MAX_FILL_WORDS` words."""
    words = normalise(reply).split()
    return 0 < len(words) <= MAX_FILL_WORDS and any(ch.isalnum() for ch in "".join(words))


def fills_masks(replies: Sequence[str]) -> bool:
    """Whether a model fills masks: at least half of its replies are fills (a model with no
    reply is given the benefit of the doubt)."""
    return not replies or sum(map(is_fill, replies)) * 2 >= len(replies)


def exact_match(reply: str, word: str) -> bool:
    return bool(normalise(word)) and normalise(reply) == normalise(word)


@dataclass(frozen=True, kw_only=True)
class TsGuessProbe:
    """One greedy request per item with an eligible word; the score is 1.0 for an exact match,
    0.0 otherwise, NULL (with the reason) for an item that has no eligible word."""

    kind: ClassVar[str] = "ts-guess"
    metric: ClassVar[str] = "exact_match"
    max_output_tokens: int = 16
    masked_field: str | None = None  # named in the params under a study's own template

    def __post_init__(self) -> None:
        if self.max_output_tokens < 1:
            raise ValueError(f"--max-output-tokens must be at least 1, not {self.max_output_tokens}")

    def params(self) -> dict[str, Any]:
        params = {"rule": RULE, "template": TEMPLATE, "mask": MASK, "normalisation": NORMALISATION,
                  "stop_words": len(STOP_WORDS), "wordfreq": version("wordfreq"),
                  "temperature": 0.0, "max_output_tokens": self.max_output_tokens}
        if self.masked_field is not None:  # the paper's params (and hash) stay as they were
            params["masked_field"] = self.masked_field
        return params

    def prompts(self, item: ProbeItem) -> Sequence[ProbePrompt]:
        slot = choose_slot(item.question, item.title)
        if slot is None:
            return ()
        return (ProbePrompt(variant="masked", system="", user=masked_prompt(item, slot),
                            temperature=0.0, max_output_tokens=self.max_output_tokens),)

    def score(self, item: ProbeItem, texts: Mapping[str, Sequence[str]]) -> Sequence[ProbeScore]:
        slot = choose_slot(item.question, item.title)
        if slot is None:
            return (ProbeScore(metric=self.metric, value=None,
                               detail={"rule": RULE, "reason": NO_ELIGIBLE_WORD}),)
        reply = (texts.get("masked") or [""])[0]
        detail = {"rule": RULE, "word": slot.word, "zipf": slot.zipf, "position": slot.start,
                  "reply": normalise(reply)}
        return (ProbeScore(metric=self.metric, value=float(exact_match(reply, slot.word)),
                           detail=detail),)


def build(context: ProbeContext, **options: Any) -> TsGuessProbe:
    """The registry's builder: ts-guess asks its own prompt (the paper's); under a study's own
    template it masks a word of the study's ``{question}`` field, and says so in its params."""
    return TsGuessProbe(**options, masked_field="question" if context.own_template else None)
