"""Text rules shared by every provider, importer and metric, and how text reaches a terminal."""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = ["normalise_answer", "is_blank", "sha256_text", "visible", "ABSTENTION_PATTERN"]

_FENCE = re.compile(r"^```[\w+-]*\s*\n?(.*?)\n?```$", re.DOTALL)
_ANSWER_LABEL = re.compile(r"^\s*(?:\*\*)?(?:final\s+)?answer(?:\*\*)?\s*[:：]\s*(?:\*\*)?", re.IGNORECASE)
_WRAPPING_QUOTES = [('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"), ("`", "`")]


def _strip_wrapping_quotes(text: str) -> str:
    for left, right in _WRAPPING_QUOTES:
        if len(text) >= 2 and text.startswith(left) and text.endswith(right):
            inner = text[len(left):-len(right)]
            if left not in inner and right not in inner:  # one quoted span, not two
                return inner.strip()
    return text


def normalise_answer(raw: str | None) -> str:
    """Strip code fences, wrapping quotes and leading ``Answer:`` labels; collapse whitespace.

    Applied identically to every provider's reply (the seed paper applied it to two pipelines of
    four, which skewed the surface metrics between models)."""
    text = (raw or "").strip()
    fence = _FENCE.match(text)
    if fence:
        text = fence.group(1).strip()
    text = _ANSWER_LABEL.sub("", text, count=1).strip()
    text = _strip_wrapping_quotes(text)
    return " ".join(text.split())


def is_blank(text: str | None) -> bool:
    return text is None or not text.strip()


# Declining to answer, as opposed to confabulating. Kept as a regular expression so that the
# `cells` view can apply the very same rule in SQL (DuckDB's RE2 syntax: no look-arounds).
ABSTENTION_PATTERN = (
    r"(?i)\b(i\s+(do\s+not|don'?t|cannot|can'?t)\s+(know|recall|remember|say|be\s+sure|answer)"
    r"|i'?m\s+not\s+(sure|familiar|aware|certain)|i\s+am\s+not\s+(sure|familiar|aware|certain)"
    r"|i\s+have\s+no\s+(information|knowledge|idea)|i\s+(don'?t|do\s+not)\s+have\s+(information|"
    r"enough\s+information|any\s+information|knowledge|details)|not\s+familiar\s+with"
    r"|unable\s+to\s+(answer|provide|recall|determine)|no\s+(reliable\s+)?information\s+(about|on))"
)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def visible(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` safe to print on a terminal: control, format (bidi, zero-width), separator and
    unassigned characters as escapes (ESC as ``\\x1b``, U+202E as ``\\u202e``), so a model name,
    a file name or an answer cannot restyle or rewrite the screen. Newlines are kept unless
    ``keep_newlines`` is false (a line that must stay one line)."""
    if text.isprintable():  # the common case, in C: nothing to escape
        return text
    return "".join(_escape(char) if _hidden(char) and (char != "\n" or not keep_newlines)
                   else char for char in text)


def _hidden(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn")


def _escape(char: str) -> str:
    return char.encode("unicode_escape", "backslashreplace").decode("ascii")
