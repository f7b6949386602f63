"""Shared fixtures: a real DuckDB store in a temporary folder and an in-process `contam`."""

from __future__ import annotations

import os

import pytest
import stamina

# Nothing in the test suite may reach a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


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
    from harness.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        status = main([str(a) for a in args])
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run
