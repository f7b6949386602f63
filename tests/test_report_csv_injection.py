"""Formulas in CSV tables: a model name, title or answer that a spreadsheet would run
(``=cmd|' /C calc'!A0``, ``=HYPERLINK(...)``, ``+``, ``-``, ``@``) reaches no tables/*.csv as a
live formula; numbers, negative ones included, stay numbers for pandas and R."""

from __future__ import annotations

import csv

import pandas as pd
import pytest

from contam.harness.report.writers.tables import csv_value
from tests.test_analysis import make_store

FORMULAS = ["=cmd|' /C calc'!A0", '=HYPERLINK("http://evil.example","x")', "+1+cmd|' /C calc'!A0",
            "-2+3+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0"]
ITEMS = [("d1", "Doc A", "canon"), ("d2", FORMULAS[1], "canon"), ("d3", "Doc B", "canon"),
         ("u1", FORMULAS[3], "hack"), ("u2", "Hack A", "hack"), ("u3", FORMULAS[4], "hack")]


def formula_store(path):
    models = [FORMULAS[0], FORMULAS[2], "plain"]
    answers = [(i, m, FORMULAS[n % len(FORMULAS)])
               for n, ((i, _, _), m) in enumerate((it, m) for it in ITEMS for m in models)]
    labels = [(i, m, "human", "right" if i in ("d1", "d2", "u1") or m == "plain" else "wrong")
              for i, m, _ in answers]
    scores = [(i, m, "bleu2", 0.25 if m == "plain" else 0.75) for i, m, _ in answers]
    return make_store(path, ITEMS, answers, labels, scores)


def cells(folder):
    for path in sorted(folder.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.reader(handle):
                for cell in row:
                    yield path.name, cell


def is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def test_no_csv_the_report_writes_holds_a_live_formula(tmp_path, contam):
    path = tmp_path / "f.duckdb"
    formula_store(path).close()
    status, _, err = contam("report", "--store", path, "--contrast", "canon,hack", "--out",
                            tmp_path / "r")
    assert status == 0, err
    folder = tmp_path / "r" / "tables"
    seen = list(cells(folder))
    live = [(name, cell) for name, cell in seen
            if cell[:1] in ("=", "+", "-", "@") and not is_number(cell) and cell != "-"]
    assert live == []
    neutralised = {cell for _, cell in seen if cell.startswith("'")}
    assert f"'{FORMULAS[0]}" in neutralised and f"'{FORMULAS[2]}" in neutralised  # model names
    assert f"'{FORMULAS[1]}" in neutralised  # a title
    gap = pd.read_csv(folder / "gap_by_model.csv")
    assert pd.api.types.is_numeric_dtype(gap["gap"])  # numbers stay numbers
    assert set(gap["model"]) >= {f"'{FORMULAS[0]}", "plain"}


@pytest.mark.parametrize("value, written", [
    ("=1+1", "'=1+1"), ("+x", "'+x"), ("-x", "'-x"), ("@x", "'@x"), ("\tx", "'\tx"),
    ("-0.25", "-0.25"), ("-inf", "-inf"), ("+3", "+3"), ("-", "-"), ("plain", "plain"),
    (-0.25, "-0.25"), (3, "3"), (None, ""),
])
def test_each_value_is_neutralised_only_when_it_is_text_a_spreadsheet_would_run(value, written):
    assert csv_value(value) == written
