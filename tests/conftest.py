"""Shared fixtures: a real DuckDB store in a temporary folder and an in-process `contam`."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

# Nothing in the test suite may reach a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session", autouse=True)
def converted_models_cache():
    """Converted local models go to a folder of this session's, removed at the end (each copy is
    about half a gigabyte), never to the user's cache."""
    folder = tempfile.mkdtemp(prefix="contam-models-")
    os.environ["CONTAM_CACHE_DIR"] = folder
    yield Path(folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def store_path(tmp_path):
    return tmp_path / "store.duckdb"


@pytest.fixture
def contam(capsys):
    """Run `contam ARGS...` in-process; returns (exit status, stdout, stderr)."""
    from harness.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        status = main([str(a) for a in args])
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run
