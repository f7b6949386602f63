"""A new metric is one module and one registry entry. This module is a whole toy metric, "initial"
(a rule: right when the answer's first letter is the reference's), registered in
``contam.metrics.metric_registry.METRICS`` for the test only; ``contam score --metric initial`` then
scores it, the store's ``cells`` view has its column, and ``contam report --correct initial``
counts right answers by it, with no other file touched. The last test checks the same of the real
rule metrics: each is named as a string only by the registry and its scorer's module (and the
frozen migrations)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from contam.harness.store import Store, utc_now
from contam.metrics.metric_registry import METRICS, RULE, MetricSpec, rule_metrics

ROOT = Path(__file__).resolve().parents[1]
NAME = "initial"


def _first_letter(text: str | None) -> str | None:
    letters = [c for c in (text or "") if c.isalpha()]
    return letters[0].casefold() if letters else None


def initial_scorer():
    """(score_many, params), as the registry asks of a scorer."""
    def score_many(pairs):
        return [None if _first_letter(r) is None or _first_letter(a) is None
                else float(_first_letter(a) == _first_letter(r)) for a, r in pairs]
    return score_many, {"implementation": __name__, "version": 1}


TOY = MetricSpec(NAME, "First letter", RULE, f"{__name__}:initial_scorer")

ITEMS = [("i1", "Paris"), ("i2", "Rome"), ("i3", "Oslo"), ("i4", "Bern")]
ANSWERS = {"i1": "Perhaps Paris", "i2": "Madrid", "i3": "Oslo.", "i4": ""}  # right, wrong, right, empty


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(METRICS, NAME, TOY)


def _store(path: Path) -> Path:
    with Store(path, create=True) as store:
        store.append("items", [{"item_id": i, "title": None, "subset": None, "question": f"{i}?",
                                "reference": r, "extra": json.dumps({}), "added_at": utc_now()}
                               for i, r in ITEMS])
        store.append("answers", [{"item_id": i, "model": "m", "answer_raw": a, "answer": a,
                                  "created_at": utc_now()} for i, a in ANSWERS.items()])
    return path


def test_the_toy_metric_scores_and_is_a_column_of_cells(tmp_path, toy, contam):
    store = _store(tmp_path / "s.duckdb")
    status, out, err = contam("score", "--store", store, "--metric", NAME, "--no-progress")
    assert status == 0, err
    assert f"{NAME}: 4 scored (1 NULL)" in out
    with Store(store, read_only=True) as opened:
        values = dict(opened.query(f"SELECT item_id, {NAME} FROM cells"))
    assert values == {"i1": 1.0, "i2": 0.0, "i3": 1.0, "i4": None}


def test_the_toy_metric_is_an_outcome_of_the_report(tmp_path, toy, contam):
    store = _store(tmp_path / "s.duckdb")
    assert contam("score", "--store", store, "--metric", NAME, "--no-progress")[0] == 0
    status, out, err = contam("report", "--store", store, "--correct", NAME, "--format", "json")
    assert status == 0, err
    overall = json.loads(out)["overall"]
    assert [(r["right"], r["n"]) for r in overall] == [(2, 4)]  # the empty answer is wrong


def test_a_new_metric_touches_one_module_and_one_registry_entry():
    assert TOY.scorer.partition(":")[0] == __name__
    assert NAME not in METRICS


# The strings a source file may hold that spell a rule metric's name in another sense: the
# frozen migrations (literal SQL, never edited), `[scoring] regex` (the setting the regex metric
# takes, also in the study.toml that init writes), "exact" as in Fisher's exact test and exact match of probes.
_ELSEWHERE = {"harness/store/schema.py": set(rule_metrics()),
              "harness/config.py": {"regex"}, "harness/config_schema.py": {"regex"},
              "harness/jobs/init_toml.py": {"regex"},
              "harness/report/statistics/named_tests.py": {"exact"}, "harness/report/statistics/signflip.py": {"exact"},
              "harness/report/parts/probe_guided.py": {"exact"}, "harness/report/texts/markdown.py": {"exact"}}
_REGISTRY = "metrics/metric_registry.py"


def _named_metrics(path: Path) -> set[str]:
    """The rule metrics a file names as a string of its own (``"contains"`` or SQL's
    ``'contains'``), docstrings aside."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    named = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            named |= {m for m in rule_metrics() if node.value == m or re.search(rf"'{m}'", node.value)}
    return named


def _scorer_file(metric: str) -> str:
    return METRICS[metric].scorer.partition(":")[0].removeprefix("contam.").replace(".", "/") + ".py"


def test_each_rule_metric_is_spelt_only_in_the_registry():
    sources = [p for package in ("harness", "metrics", "providers") for p in (ROOT / package).rglob("*.py")]
    named = {p.relative_to(ROOT).as_posix(): kinds for p in sources if (kinds := _named_metrics(p))}
    outside = {file: {m for m in kinds - _ELSEWHERE.get(file, set()) if _scorer_file(m) != file}
               for file, kinds in named.items() if file != _REGISTRY}
    assert {file: kinds for file, kinds in outside.items() if kinds} == {}
    assert named[_REGISTRY] == set(rule_metrics())
