"""The docs' notebook example (docs/how-to/notebook.md), run as written against the loopback emulator; the API's one
convention for the store; nothing printed by stamina; results that read well in a notebook."""

from __future__ import annotations

import inspect
import logging
import re
from pathlib import Path

import pandas as pd
import pytest
from stamina.instrumentation import get_on_retry_hooks, set_on_retry_hooks

from contam.harness import api
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from tests.runkit import model_entry, write_config

NOTEBOOK_PAGE = Path(__file__).resolve().parent.parent / "docs" / "how-to" / "notebook.md"


def notebook_example() -> str:
    section = NOTEBOOK_PAGE.read_text(encoding="utf-8").split("## From Python (a notebook)", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


def test_the_docs_notebook_example_ends_in_a_frame_of_cells(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with run_emulator(EmulatorSettings()) as emu:
        config = write_config(tmp_path, [model_entry("ollama", emu)], items=12)
        config.rename(tmp_path / "study.toml")
        namespace: dict = {}
        exec(notebook_example(), namespace)
    frame = namespace["frame"]
    assert namespace["answered"].rows == [("ollama-m", 10)]
    assert isinstance(frame, pd.DataFrame)
    assert len(frame) == 10 and set(frame["model"]) == {"ollama-m"}  # --limit 10 of 12 items
    assert frame["answer"].notna().all() and frame["bleu2"].notna().all()
    assert {"item_id", "reference", "human_label", "judge_label", "bertscore_f1"} <= set(frame.columns)


def test_the_api_returns_the_summary_instead_of_printing_it(tmp_path, capsys):
    store = tmp_path / "s.duckdb"
    with run_emulator(EmulatorSettings()) as emu:
        config = write_config(tmp_path, [model_entry("ollama", emu)], items=3)
        result = api.run(config, store=store, options=api.JobOptions(no_progress=True))
    assert result.exit_status == 0 and result.summary[-1] == "ollama-m: 3/3 answered"
    assert api.sql("SELECT count(*) FROM answers", store=store).rows == [(3,)]
    assert "ollama-m: 3/3 answered" not in capsys.readouterr().out.splitlines()  # only the display


def test_every_api_function_takes_the_store_and_options_by_keyword_only():
    functions = {name: getattr(api, name) for name in api.__all__
                 if inspect.isfunction(getattr(api, name))}
    with_store = {name for name, f in functions.items()
                  if "store" in inspect.signature(f).parameters}
    assert with_store == {"import_path", "run", "probe", "probe_min_k", "judge", "score", "report", "sql", "cells",
                          "list_batches", "cancel_batch", "cost", "plant"}
    for name in with_store:
        parameters = inspect.signature(functions[name]).parameters
        keyword_only = {p.name for p in parameters.values() if p.kind is p.KEYWORD_ONLY}
        assert {"store", *({"options"} & set(parameters))} <= keyword_only, name


@pytest.fixture
def stamina_default_hooks():
    """stamina as a notebook has it: its default hook, which logs each retry as a warning."""
    set_on_retry_hooks(None)
    yield get_on_retry_hooks()
    set_on_retry_hooks(None)


def test_api_run_logs_no_stamina_retry_and_leaves_its_hooks_as_they_were(
        tmp_path, caplog, stamina_default_hooks):
    with run_emulator(EmulatorSettings(script=["500", "500"])) as emu:
        config = write_config(tmp_path, [model_entry("ollama", emu)], items=3)
        with caplog.at_level(logging.DEBUG):
            result = api.run(config, store=tmp_path / "s.duckdb",
                             options=api.JobOptions(no_progress=True))
    assert result.exit_status == 0 and result.stats[0].retries == 2  # stamina did retry
    assert not [r for r in caplog.records if r.name == "stamina"]
    assert "stamina.retry_scheduled" not in caplog.text
    assert get_on_retry_hooks() == stamina_default_hooks


def test_a_job_results_repr_shows_its_values_and_no_function(tmp_path):
    with run_emulator(EmulatorSettings()) as emu:
        config = write_config(tmp_path, [model_entry("ollama", emu)], items=2)
        result = api.run(config, store=tmp_path / "s.duckdb",
                         options=api.JobOptions(no_progress=True))
    text = repr(result)
    assert "ollama-m: 2/2 answered" in text and "done=2" in text
    assert "bound method" not in text and "<function" not in text and " at 0x" not in text


def test_the_api_runs_a_probe_with_its_parameters(tmp_path):
    from contam.harness import api

    store = tmp_path / "s.duckdb"
    with run_emulator(EmulatorSettings()) as emu:
        config = write_config(tmp_path, [model_entry("ollama", emu)], items=2)
        options = api.ProbeOptions(no_progress=True, handle_signals=False, parameters={"samples": 3})
        result = api.probe("cdd", config, store=store, options=options)
    assert result.exit_status == 0 and (result.samples_stored, result.cells_scored) == (8, 2)
    assert api.sql("SELECT count(*) FROM probe_samples", store=store).rows == [(8,)]
