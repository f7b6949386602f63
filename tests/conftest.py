"""Shared fixtures: a real DuckDB store, the loopback emulator, the fake keys, an in-process
`contam`, retries without waits, and the paper data's store, report and report folder."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import stamina

# Nothing in the test suite may reach a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


MODELS_FOLDER = pytest.StashKey[str]()


def pytest_configure(config):
    """Converted local models go to one folder of this test run's (each copy is about half a
    gigabyte), never to the user's cache, removed at the end. It is made before pytest-xdist
    starts its workers, which inherit it: a model is converted once per run, not per worker."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a worker: the folder is its controller's
    config.stash[MODELS_FOLDER] = os.environ["CONTAM_CACHE_DIR"] = tempfile.mkdtemp(
        prefix="contam-models-")


def pytest_unconfigure(config):
    if MODELS_FOLDER in config.stash:
        shutil.rmtree(config.stash[MODELS_FOLDER], ignore_errors=True)


@pytest.fixture(scope="session")
def converted_models_cache() -> Path:
    return Path(os.environ["CONTAM_CACHE_DIR"])


@pytest.fixture(autouse=True)
def retries_without_waits():
    """stamina's test mode: every backoff is zero; ``cap`` keeps each model's max_attempts."""
    with stamina.set_testing(True, attempts=1_000, cap=True):
        yield


@pytest.fixture
def store_path(tmp_path):
    return tmp_path / "store.duckdb"


@pytest.fixture
def contam(capsys):
    """Run `contam ARGS...` in-process; returns (exit status, stdout, stderr)."""
    from contam.harness.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        status = main([str(a) for a in args])
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


@pytest.fixture
def store(store_path):
    """An open, migrated store."""
    from contam.harness.store import Store

    with Store(store_path, create=True) as opened:
        yield opened


@pytest.fixture
def emulator():
    """A factory: ``emulator(**settings)`` starts a loopback emulator, stopped after the test."""
    from contam.harness.emulator.server import EmulatorSettings, run_emulator

    with contextlib.ExitStack() as stack:
        yield lambda **settings: stack.enter_context(run_emulator(EmulatorSettings(**settings)))


@pytest.fixture
def keys(monkeypatch):
    """The distinctive fake keys of tests.runkit in their providers' variables."""
    from tests.runkit import KEYS

    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    return KEYS


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def paper_path(tmp_path_factory):
    """The seed paper's data (tests.paper_data) as a store, built once per test session (read only)."""
    from tests.paper_data import build_paper_store

    return build_paper_store(tmp_path_factory.mktemp("paper") / "paper.duckdb")


@pytest.fixture(scope="session")
def paper(paper_path):
    """build_report of the paper's store."""
    from contam.harness.report.analysis import build_report
    from contam.harness.store import Store

    with Store(paper_path, read_only=True) as store:
        return build_report(store)


@pytest.fixture(scope="session")
def paper_out(paper_path, tmp_path_factory):
    """The folder `contam report` writes for the paper's store."""
    from contam.harness.cli import main

    out = tmp_path_factory.mktemp("report")
    assert main(["report", "--store", str(paper_path), "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="session")
def encoders():
    """Real BERTScore encoders, each (model, layer, precision, token budget) loaded once for the
    whole session on the CPU: loading one is seconds, and several test modules score with it."""
    from contam.metrics.bertscore_encoder import load_encoder  # the real loader, whatever tests patch later

    loaded = {}

    def get(model_type, layer, device=None, precision=None, token_budget=None, name=None):
        key = (str(model_type), layer, precision, token_budget, name)
        if key not in loaded:
            loaded[key] = load_encoder(str(model_type), layer, "cpu", precision, token_budget, name)
        return loaded[key]
    return get


@pytest.fixture(scope="session")
def bert_scorer():
    """bert-score's own BERTScorer on the offline encoder, layer 5, built once per session: the
    reference the BERTScore tests compare contam's pass with."""
    from bert_score import BERTScorer

    from contam.metrics.bertscore import offline_encoder_dir

    return BERTScorer(model_type=str(offline_encoder_dir()), num_layers=5, device="cpu")


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium at 1280 x 800, one per test module (a module may resize it)."""
    from tests.browserkit import chromium, require_browser

    require_browser()
    with chromium(1280, 800) as driver:
        yield driver
