"""The rule-based metrics a study's ``[scoring] metrics`` may name: ``exact``, ``contains``,
``numeric`` and ``regex``. Each takes (answer, reference) and returns 1.0 (right), 0.0 (wrong) or
None (not scorable); each ``*_scorer`` is what its entry in :mod:`contam.metrics.metric_registry` names.
See ARCHITECTURE.md, "Where an addition goes" (a metric).

Normalisation (``exact``, ``contains``, ``regex``) is SQuAD's, made Unicode-aware: NFKC, case
folded, every punctuation character (Unicode category P*) and ASCII symbol removed, the whole
words a/an/the removed, whitespace collapsed. Accents are kept ("café" is not "cafe").

Not scorable (None): a blank answer or a blank reference (``contam score`` writes NULL for those
without calling a metric, and the report counts a blank answer as wrong), a reference that
normalises to nothing, and for ``numeric`` a reference without a number.

``numeric`` reads the first number of each text: ASCII digits, an optional sign (``-``, ``+``,
U+2212) that is not glued to a word ("COVID-19" is 19), commas as thousands separators only in
groups of three ("1,234,567"; "3,5" is 3), a decimal point, and scientific notation ("1.5e3" is
1500). A number glued to a preceding letter, digit or point is no number ("mp3", "H2O", "v1.5"). A percent sign is
ignored: "50%" is 50, never 0.5. Words ("five") are not numbers. Two numbers are equal when
``|a - r| <= tolerance * max(|a|, |r|)`` (``math.isclose``, relative only), so 0 equals only 0.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata

from collections.abc import Callable, Iterable
from functools import partial

from contam.harness.errors import UserError
from contam.harness.text import is_blank

__all__ = ["normalise", "exact", "contains", "first_number", "numeric", "regex_match",
           "compile_answer_regex", "exact_scorer", "contains_scorer", "numeric_scorer",
           "regex_scorer"]

_VERSION = 1  # bump when a rule changes: `contam score` then scores every answer again
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_ASCII_SYMBOLS = frozenset(string.punctuation)
_NUMBER = re.compile(
    r"(?<![\w.])"  # not glued to a word or a decimal point ("mp3", "COVID-19" is 19, "v1.5" none)
    r"(?P<sign>[-+\u2212])?"
    r"(?P<body>(?:[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+)(?:\.[0-9]+)?|\.[0-9]+)"
    r"(?P<exp>[eE][-+]?[0-9]+)?")


def _drop_punctuation(text: str) -> str:
    return "".join(c for c in text
                   if c not in _ASCII_SYMBOLS and not unicodedata.category(c).startswith("P"))


def normalise(text: str) -> str:
    """SQuAD's answer normalisation, Unicode-aware (see the module docstring)."""
    folded = _drop_punctuation(unicodedata.normalize("NFKC", text).casefold())
    return " ".join(_ARTICLES.sub(" ", folded).split())


def _normalised_pair(answer: str | None, reference: str | None) -> tuple[str, str] | None:
    """Both texts normalised; None when either is blank or the reference normalises to nothing."""
    if is_blank(answer) or is_blank(reference):
        return None
    normal_reference = normalise(reference)
    return (normalise(answer), normal_reference) if normal_reference else None


def exact(answer: str | None, reference: str | None) -> float | None:
    """1.0 when the normalised answer equals the normalised reference."""
    pair = _normalised_pair(answer, reference)
    return None if pair is None else float(pair[0] == pair[1])


def contains(answer: str | None, reference: str | None) -> float | None:
    """1.0 when the normalised reference occurs in the normalised answer as whole words."""
    pair = _normalised_pair(answer, reference)
    return None if pair is None else float(f" {pair[1]} " in f" {pair[0]} ")


def first_number(text: str | None) -> float | None:
    """The first number in ``text`` (see the module docstring), or None."""
    found = _NUMBER.search(text or "")
    if found is None:
        return None
    sign = "-" if found["sign"] in ("-", "\u2212") else ""
    return float(sign + found["body"].replace(",", "") + (found["exp"] or ""))


def numeric(answer: str | None, reference: str | None, tolerance: float = 1e-6) -> float | None:
    """1.0 when the answer's first number equals the reference's within ``tolerance`` (relative)."""
    if is_blank(answer) or is_blank(reference):
        return None
    expected = first_number(reference)
    if expected is None:
        return None
    given = first_number(answer)
    return 0.0 if given is None else float(math.isclose(given, expected, rel_tol=tolerance,
                                                        abs_tol=0.0))


def compile_answer_regex(pattern: str, where: str = "[scoring] regex") -> re.Pattern[str]:
    """``pattern`` compiled; refused in one line when it does not compile or has no group 1."""
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise UserError(f"{where}: {pattern!r} does not compile ({exc})") from None
    if compiled.groups < 1:
        raise UserError(f"{where}: {pattern!r} has no group: put the answer in ( ), "
                        r"e.g. 'answer is (\w+)'")
    return compiled


def regex_match(answer: str | None, reference: str | None, pattern: re.Pattern[str]) -> float | None:
    """Group 1 of the first match of ``pattern`` in the answer, then :func:`exact`; 0.0 when the
    answer has no match (or group 1 took no part in it)."""
    if _normalised_pair(answer, reference) is None:
        return None
    found = pattern.search(answer)
    picked = found.group(1) if found else None
    return 0.0 if picked is None else float(normalise(picked) == normalise(reference))


# -- the scorers the metric registry names: (score_many, the params each row records) -----------

Pair = tuple[str | None, str | None]
Scorer = tuple[Callable[[Iterable[Pair]], list[float | None]], dict]
_IMPLEMENTATION = "contam.metrics.rules"
_NORMALISED = {"implementation": _IMPLEMENTATION, "version": _VERSION,
               "normalisation": "NFKC, casefold, punctuation and a/an/the removed"}


def _many(rule: Callable[[str | None, str | None], float | None]):
    return lambda pairs: [rule(answer, reference) for answer, reference in pairs]


def exact_scorer() -> Scorer:
    return _many(exact), dict(_NORMALISED)


def contains_scorer() -> Scorer:
    return _many(contains), dict(_NORMALISED)


def numeric_scorer(numeric_tolerance: float) -> Scorer:
    params = {"implementation": _IMPLEMENTATION, "version": _VERSION, "tolerance": numeric_tolerance}
    return _many(partial(numeric, tolerance=numeric_tolerance)), params


def regex_scorer(regex: str | None) -> Scorer:
    """Refused in one line, before anything is written, without a usable pattern."""
    if not regex:
        raise UserError("metric regex needs [scoring] regex = \"...(group)...\" in the study's "
                        "config")
    pattern = compile_answer_regex(regex)
    return _many(partial(regex_match, pattern=pattern)), {**_NORMALISED, "regex": regex}
