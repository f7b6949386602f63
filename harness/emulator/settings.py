"""What an emulator is told: its settings, scripted steps, faults, and the stand-in replies."""

from __future__ import annotations

import math
import re
import unicodedata
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from contam.harness.emulator.apis import Canned

__all__ = ["EmulatorSettings", "RecordedRequest", "Step", "parse_step", "parse_faults",
           "default_answer", "default_reply", "is_judge_request", "sampled_reply", "judge_label",
           "ItemKnowledge", "RESET", "HANG"]

RESET, HANG = "reset", "hang"  # outcomes that are not an HTTP answer
_STEP_WORDS = {"ok", "quota", "reset", "malformed", "hang"}


@dataclass(frozen=True, slots=True)
class Step:
    """One scripted or drawn outcome: ok, an HTTP error status, a 429 with a hint, and so on."""

    kind: str  # ok | status | rate | rate_date | quota | reset | malformed | hang
    status: int | None = None
    seconds: float | None = None


def parse_step(text: str) -> Step:
    """``ok``, ``500``, ``529``, ``429`` / ``429:1.5`` (hint in seconds), ``429date:3`` (the hint as
    an HTTP date), ``quota``, ``reset``, ``malformed`` or ``hang``."""
    word, _, arg = text.strip().lower().partition(":")
    if word in _STEP_WORDS and not arg:
        return Step(word)
    if word in ("429", "429date"):
        seconds = _non_negative_float(arg, text) if arg else 1.0
        return Step("rate_date" if word == "429date" else "rate", 429, seconds)
    if word.isdigit() and 400 <= int(word) <= 599 and not arg:
        return Step("status", int(word))
    raise ValueError(f"unknown emulator outcome {text!r}: expected ok, an HTTP status 400-599, "
                     "429:SECONDS, 429date:SECONDS, quota, reset, malformed or hang")


def _non_negative_float(value: str, context: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{context!r}: {value!r} is not a number") from None
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{context!r}: {value!r} must be a non-negative number")
    return number


def parse_faults(spec: str) -> dict[str, float]:
    """``500=0.05,529=0.02,reset=0.01,malformed=0.01,hang=0.01`` -> {outcome: probability}."""
    faults: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, rate = item.partition("=")
        if not sep:
            raise ValueError(f"fault {item!r}: expected OUTCOME=PROBABILITY, e.g. 500=0.05")
        parse_step(name)
        faults[name.strip()] = _non_negative_float(rate, item)
    _check_faults(faults)
    return faults


def _check_faults(faults: Mapping[str, float]) -> None:
    for name, rate in faults.items():
        parse_step(name)
        if not 0 <= rate <= 1:
            raise ValueError(f"fault {name!r}: probability {rate} is not between 0 and 1")
    if sum(faults.values()) > 1 + 1e-9:
        raise ValueError(f"fault probabilities add up to {sum(faults.values()):g}, more than 1")


def default_answer(question: str) -> str:
    """A short answer that depends only on the question, so reruns are reproducible."""
    return f"Emulated answer {zlib.crc32(question.encode('utf-8')):08x}."


# The judge request's user text (contam.metrics.judge.judge_request); the reference comes first.
_JUDGE_USER = re.compile(r"\AReference answer: (?P<reference>.*?)\nAnswer to grade: (?P<answer>.*)\Z",
                         re.DOTALL)
# Words too common to count as "sharing part of the reference" on their own.
_FUNCTION_WORDS = frozenset(
    "a an the of in on at to for from by with and or is was are were it its his her their".split())


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold()))


def judge_label(reference: str, answer: str) -> str:
    """A deterministic stand-in for an LLM judge, in the rubric's reply vocabulary: ``right``
    when the answer holds every word of the reference, ``partially right`` when it holds some of
    its content words, else ``wrong``."""
    wanted, given = _words(reference), _words(answer)
    if wanted and wanted <= given:
        return "right"
    if (wanted - _FUNCTION_WORDS) & given:
        return "partially right"
    return "wrong"


def is_judge_request(user: str) -> bool:
    """A judge request is told by its user text, not its system prompt: a study's own ``[judge]
    rubric`` replaces the system prompt, never the user text."""
    return _JUDGE_USER.match(user) is not None


def default_reply(system: str, user: str) -> str:
    """What the emulator answers without a ``responder``: a bare label to a judge request (see
    :func:`is_judge_request`), so ``contam judge`` works against ``contam emulator`` whatever the
    rubric; :func:`default_answer` to anything else."""
    graded = _JUDGE_USER.match(user)
    if graded is None:
        return default_answer(user)
    return judge_label(graded["reference"], graded["answer"])


def sampled_reply(system: str, user: str, *, temperature: float | None, sample: int) -> str:
    """:func:`default_reply`, and at a temperature above 0 every sample told apart from it
    by a few words of its own: a model that knows nothing samples diverse answers."""
    reply = default_reply(system, user)
    if not temperature:
        return reply
    return f"{reply.rstrip('.')}, or so it seems (take {sample})."


class ItemKnowledge(Protocol):
    """What the emulator asks of its knowledge of a set of items
    (:class:`contam.harness.emulator.knowledge.Knowledge`, which imports this module)."""

    def item_for(self, text: str) -> Any: ...

    def memorised(self, item: Any) -> bool: ...

    def answers(self, system: str, user: str, *, temperature: float | None,
                samples: Iterable[int], model: str | None = None) -> list[str]: ...


@dataclass(frozen=True, kw_only=True)
class EmulatorSettings:
    """How the emulator behaves. Every field is optional; the default is a fast, faultless server."""

    latency_ms: float = 0.0  # added before every answer except 429s and auth failures
    jitter_ms: float = 0.0  # latency varies uniformly by +/- this much
    rpm: float | None = None  # enforced per (API, model) over a sliding 60 s window
    slots: int | None = None  # requests worked on at once, the rest queue (a served model's batch)
    faults: Mapping[str, float] = field(default_factory=dict)  # outcome -> probability
    script: Sequence[str] = ()  # exact outcomes for the first requests, consumed in order
    served_model: str | None = None  # answer as this model whatever was asked for
    quota_per_day: int | None = None  # requests per (API, model) before the day's quota is gone
    api_keys: frozenset[str] | None = None  # when set, other keys get each API's auth error
    responder: Callable[[str], str] | None = None  # question text -> answer; default_reply if None
    # Answer like a model that knows these items (contam emulator --items); the responder wins.
    knowledge: ItemKnowledge | None = None
    known_models: frozenset[str] | None = None  # when set, other models are 404 (Ollama: not pulled)
    hang_s: float = 600.0  # how long a "hang" holds the connection open without answering
    seed: int | None = None  # for the fault draws and the jitter
    record: bool = True  # keep every request in Emulator.requests
    batch_processing_s: float = 0.0  # a batch job ends this long after it was created
    batch_fail_rate: float = 0.0  # probability that a batch line fails with a 500
    batch_expire_rate: float = 0.0  # probability that a batch line expires unprocessed
    # One completion per reply whatever n / candidateCount asks, as `transformers serve` does.
    ignore_n: bool = False
    # Called with each request and its answer once the answer is on the socket (a soak's ledger).
    on_sent: Callable[[RecordedRequest, Canned], None] | None = None

    def __post_init__(self) -> None:
        for step in self.script:
            parse_step(step)
        _check_faults(self.faults)
        if self.latency_ms < 0 or self.jitter_ms < 0 or (self.rpm is not None and self.rpm <= 0):
            raise ValueError("latency and jitter must be >= 0 and rpm > 0")
        if self.quota_per_day is not None and self.quota_per_day < 0:
            raise ValueError("quota_per_day must be >= 0")
        if self.slots is not None and self.slots < 1:
            raise ValueError("slots must be >= 1")
        if self.batch_processing_s < 0 or not 0 <= self.batch_fail_rate + self.batch_expire_rate <= 1:
            raise ValueError("batch_processing_s must be >= 0 and the batch rates add up to 0..1")


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as received: lower-cased header names, the JSON body parsed (None if none)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    raw_body: bytes
    client: tuple[str, int] | None = None  # the peer address: one per keep-alive connection
    received_at: float = 0.0  # time.time() when the whole request had arrived
