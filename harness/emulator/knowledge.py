"""The emulator's knowledge: answer like a model that knows a set of items.

Design notes: ARCHITECTURE.md, The emulator's knowledge.
"""

from __future__ import annotations

import difflib
import math
import random
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from contam.harness.emulator.items import KnownItem, read_known_items
from contam.harness.emulator.settings import default_reply, is_judge_request, sampled_reply
from contam.harness.emulator.skill import exposure_weights, skill_for
from contam.metrics.probe_tsguess import STOP_WORDS

__all__ = ["KnownItem", "Knowledge", "PROFILES", "DOCUMENTED_SUBSETS"]

PROFILES = ("contaminated", "clean")
DOCUMENTED_SUBSETS = frozenset({"official"})

MEMORISED_SHARE = 0.9  # of the documented items, in the contaminated profile
REPEAT_GREEDY = 0.9  # a memorised item's samples at temperature > 0 that repeat the greedy reply
LUCKY_GUESS = 0.1  # a masked word guessed from context without memorisation
MIN_COVERAGE = 0.3  # of an item's question words (IDF-weighted) a prompt must hold to be "about" it

_MASK = re.compile(r"\[\s*mask\s*\]|<mask>|\[\s*\]|_{3,}", re.IGNORECASE)
_MASK_WORD = "zzmaskedslotzz"  # what a mask becomes before aligning a prompt with a question
_NAMES_BENCHMARK = re.compile(r"\b(dataset|benchmark)s?\b", re.IGNORECASE)
_WORD = re.compile(r"\w+")
_HEDGES = ("Maybe", "I think it is", "Possibly", "Perhaps", "It could be")


@dataclass(frozen=True)
class _Token:
    word: str  # casefolded
    start: int
    end: int


def _tokens(text: str) -> list[_Token]:
    """Word tokens of NFC text with their spans, so a span cuts the original wording."""
    return [_Token(m.group().casefold(), m.start(), m.end()) for m in _WORD.finditer(text)]


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


class Knowledge:
    """What the emulator knows: items, a profile, a seed, and what makes an item documented (its
    subset, or with ``exposure`` the items' exposure values). See the module docstring."""

    def __init__(self, items: Iterable[KnownItem], *, profile: str = "contaminated",
                 seed: int = 0, documented: Iterable[str] = DOCUMENTED_SUBSETS,
                 exposure: str | None = None) -> None:
        if profile not in PROFILES:
            raise ValueError(f"unknown knowledge profile {profile!r}: expected contaminated or clean")
        self.items: tuple[KnownItem, ...] = tuple(_nfc_item(i) for i in items)
        self.profile, self.seed = profile, seed
        self.documented_subsets, self.exposure = frozenset(documented), exposure
        self._weight = dict(zip(self.items, self._documentation_weights()))
        self._questions = [_tokens(item.question) for item in self.items]
        self._index_words()
        self._index_answers()

    @classmethod
    def from_items(cls, items: Iterable[KnownItem], *, profile: str = "contaminated",
                   seed: int = 0, documented: Iterable[str] = DOCUMENTED_SUBSETS,
                   exposure: str | None = None) -> Knowledge:
        return cls(items, profile=profile, seed=seed, documented=documented, exposure=exposure)

    @classmethod
    def from_file(cls, path: str | Path, *, profile: str = "contaminated", seed: int = 0,
                  documented: Iterable[str] = DOCUMENTED_SUBSETS,
                  exposure: str | None = None) -> Knowledge:
        """An items file (CSV or JSONL, the ``contam import items`` columns and any others),
        validated as the importer validates it: a bad line is an
        :class:`~contam.harness.errors.InputError`; so is a missing or non-numeric ``exposure`` column."""
        return cls(read_known_items(path, exposure), profile=profile, seed=seed,
                   documented=documented, exposure=exposure)

    def __repr__(self) -> str:
        documented = (f"exposure={self.exposure!r}" if self.exposure is not None else
                      f"documented={','.join(sorted(self.documented_subsets))}")
        return (f"Knowledge({len(self.items)} items, profile={self.profile!r}, seed={self.seed}, "
                f"{documented})")

    def _documentation_weights(self) -> list[float]:
        """Each item's documentation weight: 1 or 0 by its subset, or by its exposure value."""
        if self.exposure is None:
            return [float(item.subset in self.documented_subsets) for item in self.items]
        missing = next((i.item_id for i in self.items if i.exposure is None), None)
        if missing is not None:
            raise ValueError(f"item {missing!r} has no value for exposure column {self.exposure!r}")
        return exposure_weights([item.exposure for item in self.items])

    # -- which item a text is about ----------------------------------------------------------

    def _index_words(self) -> None:
        """Postings and IDF weights of the question words, openings and titles, for
        :meth:`item_for`."""
        self._content = [_content_words(tokens) for tokens in self._questions]
        self._openings = [tuple(t.word for t in tokens[:2]) for tokens in self._questions]
        self._titles = [{t.word for t in _tokens(item.title)} for item in self.items]
        self._postings: defaultdict[str, list[int]] = defaultdict(list)
        for index, words in enumerate(self._content):
            for word in words:
                self._postings[word].append(index)
        total = len(self.items)
        self._idf = {w: math.log((total + 1) / (len(p) + 1)) + 1 for w, p in self._postings.items()}
        self._weights = [sum(self._idf[w] for w in words) or 1.0 for words in self._content]

    def _index_answers(self) -> None:
        """What wrong answers are drawn from: references, question halves, question words."""
        self._reference_keys = [_key(item.reference) for item in self.items]
        self._second_halves = [(_second_half(item), _key(_second_half(item))) for item in self.items]
        self._words = sorted({t.word for tokens in self._questions for t in tokens
                              if len(t.word) > 3 and t.word.isalpha()})

    def item_for(self, text: str) -> KnownItem | None:
        """The item ``text`` is about: the one whose question's content words (not function
        words; weighted by how rare they are among the questions) the text covers most, at least :data:`MIN_COVERAGE`; a title
        the text names breaks ties between items asking the same question. None if none."""
        tokens = [t.word for t in _tokens(_nfc(text))]
        words, pairs = set(tokens), set(zip(tokens, tokens[1:]))
        covered: Counter[int] = Counter()
        for word in words & self._postings.keys():
            for index in self._postings[word]:
                covered[index] += self._idf[word]
        best, best_score = None, 0.0
        for index, weight in covered.items():
            evidence = weight / self._weights[index]
            if self._openings[index] in pairs:  # the question's first two words, in a row
                evidence = max(evidence, self._prefix_share(index, tokens))
            title = len(self._titles[index] & words) / (len(self._titles[index]) or 1)
            if evidence >= MIN_COVERAGE and evidence + 0.5 * title > best_score:
                best, best_score = index, evidence + 0.5 * title
        return None if best is None else self.items[best]

    def _prefix_share(self, index: int, tokens: list[str]) -> float:
        """The share of the question's words that ``tokens`` holds as its opening run (the
        first piece of a guided prompt may hold few content words but many words)."""
        wanted = [t.word for t in self._questions[index]]
        return _longest_prefix(wanted, tokens) / (len(wanted) or 1)

    # -- what this profile remembers -----------------------------------------------------------

    def weight(self, item: KnownItem) -> float:
        """The item's documentation weight, 0 to 1 (:mod:`contam.harness.emulator.skill`)."""
        weight = self._weight.get(item)
        if weight is None:  # an item given in another normal form, or not one of ours
            weight = self._weight.get(_nfc_item(item), float(item.subset in self.documented_subsets))
        return weight

    def memorised(self, item: KnownItem) -> bool:
        """Whether this profile shows memorisation signals for ``item``: in ``contaminated``,
        with probability :data:`MEMORISED_SHARE` times its weight (a seeded draw per item); in
        ``clean``, never."""
        weight = self.weight(item)
        if self.profile != "contaminated" or weight == 0:
            return False
        return self._rng(item, "memorised").random() < MEMORISED_SHARE * weight

    def _rng(self, item: KnownItem, purpose: str, sample: int = 0,
             temperature: float | None = None) -> random.Random:
        # A str seed is hashed with SHA-512 by random: the same in every process.
        return random.Random(f"{self.seed}\x1f{item.item_id}\x1f{purpose}\x1f{sample}\x1f{temperature}")

    # -- answering ---------------------------------------------------------------------------------

    def answer(self, system: str, user: str, *, temperature: float | None = None,
               sample: int = 0, model: str | None = None) -> str:
        """One completion of (system, user) by the model called ``model`` (None: the base
        skill), deterministic in (seed, item, sample, temperature, model)."""
        return self.answers(system, user, temperature=temperature, samples=(sample,),
                            model=model)[0]

    def answers(self, system: str, user: str, *, temperature: float | None = None,
                samples: Iterable[int] = (0,), model: str | None = None) -> list[str]:
        """A completion of (system, user) per sample number (as :meth:`answer` gives each); the
        prompt's item is recognised once for them all."""
        if is_judge_request(user):
            return [default_reply(system, user) for _ in samples]  # a judge request: a label
        item = self.item_for(user)
        if item is None:
            return [sampled_reply(system, user, temperature=temperature, sample=sample)
                    for sample in samples]
        greedy, alternative = self._replies(item, f"{system}\n{user}", user, model)
        if not temperature:
            return [greedy for _ in samples]
        memorised = self.memorised(item)
        replies = []
        for sample in samples:
            rng = self._rng(item, "sample", sample, temperature)
            replies.append(greedy if memorised and rng.random() < REPEAT_GREEDY else alternative(rng))
        return replies

    def _replies(self, item: KnownItem, prompt: str, user: str,
                 model: str | None) -> tuple[str, Callable[[random.Random], str]]:
        """(the greedy reply, a function of an rng drawing a reply that differs from it)."""
        masked = _masked_word(item, user)
        if masked is not None:
            return self._slot(item, masked), lambda rng: self._other_word(item, masked, rng)
        rest = _rest_of_question(item, user)
        if rest is not None:
            named = bool(_NAMES_BENCHMARK.search(prompt))
            greedy = self._completion(item, rest, named)
            return greedy, lambda rng: f"{rng.choice(_HEDGES)} {self._other_rest(item, rest, rng)}"
        greedy = self._question(item, model)
        return greedy, lambda rng: f"{rng.choice(_HEDGES)} {self._hedged_answer(item, rng)}."

    def _question(self, item: KnownItem, model: str | None) -> str:
        """The greedy answer to the item's question by ``model``, as its skill and the item's
        weight make it; a named model draws its own dice (the base skill keeps the unnamed ones)."""
        full, half = skill_for(model).full_and_half(self.weight(item))
        named = "" if model is None else f"\x1f{model}"
        draw = self._rng(item, f"question{named}").random()
        words = item.reference.split()
        if words and draw < full:
            return f"{item.reference.rstrip('.')}."
        if words and draw < full + half:
            return f"{' '.join(words[:math.ceil(len(words) / 2)]).rstrip('.')}."
        return f"{self._wrong_reference(item, self._rng(item, f'wrong{named}'))}."

    def _hedged_answer(self, item: KnownItem, rng: random.Random) -> str:
        return item.reference.rstrip(".") if rng.random() < 0.3 else self._wrong_reference(item, rng)

    def _wrong_reference(self, item: KnownItem, rng: random.Random) -> str:
        """Another item's reference, from the same title where there is one: plausible, wrong."""
        own = _key(item.reference)
        others = [i for i, key in zip(self.items, self._reference_keys) if key not in ("", own)]
        same_title = [i for i in others if i.title == item.title]
        pool = same_title or others
        return rng.choice(pool).reference.rstrip(".") if pool else "I am not sure"

    def _slot(self, item: KnownItem, word: str) -> str:
        if self.memorised(item) or self._rng(item, "slot").random() < LUCKY_GUESS:
            return word
        return self._other_word(item, word, self._rng(item, "slot-wrong"))

    def _other_word(self, item: KnownItem, word: str, rng: random.Random) -> str:
        """A content word of another question: a wrong guess of the masked word."""
        wrong = _key(word)
        pool = [other for other in self._words if other != wrong]
        return rng.choice(pool) if pool else "thing"

    def _completion(self, item: KnownItem, rest: str, named: bool) -> str:
        if named and self.memorised(item):
            return rest
        return self._other_rest(item, rest, self._rng(item, f"completion-{named}"))

    def _other_rest(self, item: KnownItem, rest: str, rng: random.Random) -> str:
        """The second half of another item's question: a generic completion."""
        true_rest = _key(rest)
        pool = [half for other, (half, key) in zip(self.items, self._second_halves)
                if other.item_id != item.item_id and key != true_rest]
        return rng.choice(pool) if pool else "in the game?"


def _nfc_item(item: KnownItem) -> KnownItem:
    return replace(item, **{name: _nfc(getattr(item, name)) for name in
                            ("item_id", "title", "subset", "question", "reference")})


def _key(text: str) -> str:
    return " ".join(t.word for t in _tokens(_nfc(text)))


def _second_half(item: KnownItem) -> str:
    words = item.question.split()
    return " ".join(words[len(words) // 2:])


def _masked_word(item: KnownItem, user: str) -> str | None:
    """The question's words that a mask in ``user`` stands for (their original wording), found
    by aligning the question's words with the prompt's; None if the prompt holds no mask."""
    if not _MASK.search(user):
        return None
    question = _tokens(item.question)
    prompt = [t.word for t in _tokens(_MASK.sub(f" {_MASK_WORD} ", _nfc(user)))]
    matcher = difflib.SequenceMatcher(None, [t.word for t in question], prompt, autojunk=False)
    for tag, q_start, q_end, p_start, p_end in matcher.get_opcodes():
        if tag == "replace" and _MASK_WORD in prompt[p_start:p_end]:
            return item.question[question[q_start].start:question[q_end - 1].end]
    return None


def _rest_of_question(item: KnownItem, user: str) -> str | None:
    """What follows the longest prefix of the question that ``user`` holds as consecutive
    words, when that is a proper prefix (one word or more, not the whole question); else None."""
    question = _tokens(item.question)
    prefix = _longest_prefix([t.word for t in question], [t.word for t in _tokens(_nfc(user))])
    if prefix == 0 or prefix >= len(question):
        return None
    return item.question[question[prefix - 1].end:].lstrip(" ,;:")


def _longest_prefix(wanted: list[str], tokens: list[str]) -> int:
    """How many of ``wanted``'s first words ``tokens`` holds consecutively, at most."""
    if not wanted:
        return 0
    return max((_common_prefix(wanted, tokens[start:]) for start, word in enumerate(tokens)
                if word == wanted[0]), default=0)


def _common_prefix(first: list[str], second: list[str]) -> int:
    return next((i for i, (a, b) in enumerate(zip(first, second)) if a != b),
                min(len(first), len(second)))


def _content_words(tokens: list[_Token]) -> set[str]:
    """A question's words that say what it is about: all but function words (all of them for
    a question made of function words only)."""
    words = {t.word for t in tokens}
    return (words - STOP_WORDS) or words
