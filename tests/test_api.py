"""The README's notebook example, run as written against the loopback emulator."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from harness.emulator.server import EmulatorSettings, run_emulator
from tests.runkit import model_entry, write_config

README = Path(__file__).resolve().parent.parent / "README.md"


def notebook_example() -> str:
    section = README.read_text(encoding="utf-8").split("## From Python (a notebook)", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


def test_the_readme_notebook_example_ends_in_a_frame_of_cells(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with run_emulator(EmulatorSettings()) as emu:
        config = write_config(tmp_path, [model_entry("ollama", emu)], items=12)
        config.rename(tmp_path / "study.toml")
        namespace: dict = {}
        exec(notebook_example(), namespace)
    frame = namespace["frame"]
    assert isinstance(frame, pd.DataFrame)
    assert len(frame) == 10 and set(frame["model"]) == {"ollama-m"}  # --limit 10 of 12 items
    assert frame["answer"].notna().all() and frame["bleu2"].notna().all()
    assert {"item_id", "reference", "human_label", "judge_label", "bertscore_f1"} <= set(frame.columns)


def test_the_api_returns_the_summary_instead_of_printing_it(tmp_path, capsys):
    from harness import api

    store = tmp_path / "s.duckdb"
    with run_emulator(EmulatorSettings()) as emu:
        config = write_config(tmp_path, [model_entry("ollama", emu)], items=3)
        result = api.run(config, store=store, options=api.JobOptions(no_progress=True))
    assert result.exit_status == 0 and result.summary[-1] == "ollama-m: 3/3 answered"
    assert api.sql("SELECT count(*) FROM answers", store=store).rows == [(3,)]
    assert "ollama-m: 3/3 answered" not in capsys.readouterr().out.splitlines()  # only the display


def test_the_api_runs_a_probe_with_its_parameters(tmp_path):
    from harness import api

    store = tmp_path / "s.duckdb"
    with run_emulator(EmulatorSettings()) as emu:
        config = write_config(tmp_path, [model_entry("ollama", emu)], items=2)
        options = api.ProbeOptions(no_progress=True, handle_signals=False, parameters={"samples": 3})
        result = api.probe("cdd", config, store=store, options=options)
    assert result.exit_status == 0 and (result.samples_stored, result.cells_scored) == (8, 2)
    assert api.sql("SELECT count(*) FROM probe_samples", store=store).rows == [(8,)]
