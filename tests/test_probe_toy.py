"""A new probe is one module and one registry entry. This module is a whole toy probe, "toy" (its
scorer, its report part, section and tidy table, its figure), registered in
``contam.metrics.probe_registry.PROBES`` for the test only; ``contam probe toy`` then runs it on an
emulator, stores its scores, and ``contam report`` shows its section, table and figure, with no
other file touched. The last tests check the same of the real probes: each is named only by the
registry and its own modules, and the registry is the one file that lists probes."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pytest
from matplotlib.figure import Figure

from contam.harness.emulator.knowledge import Knowledge
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.jobs.demo import demo_items_path
from contam.harness.report.model import Report
from contam.harness.report.texts.format import Section, Table, fmt_pct
from contam.harness.report.inputs.probe_rows import chosen_params, score_frame
from contam.harness.store import Store
from contam.metrics.probe_registry import PROBES, ProbeFigure, ProbeOption, ProbeSpec
from contam.metrics.probes import ProbeContext, ProbeItem, ProbePrompt, ProbeScore
from contam.metrics.template import fill_template
from tests.probekit import demo_config, model_entry
from tests.runkit import KEYS

ROOT = Path(__file__).resolve().parents[1]
PNG = b"\x89PNG"

# -- the toy probe's slice: everything a new probe brings --------------------------------------

KIND = "toy"
FIGURE = "fig_probe_toy"
CAPTION = "Probe toy: share of items whose greedy answer contains the reference, per model and subset."


@dataclass(frozen=True, kw_only=True)
class ToyProbe:
    """Asks the study's question once, greedy; scores 1.0 when the answer holds the reference."""

    kind: ClassVar[str] = KIND
    system: str
    question_template: str
    max_output_tokens: int = 32

    def params(self) -> dict[str, Any]:
        return {"system": self.system, "question_template": self.question_template,
                "max_output_tokens": self.max_output_tokens}

    def prompts(self, item: ProbeItem) -> list[ProbePrompt]:
        return [ProbePrompt(variant="greedy", system=self.system, temperature=0.0,
                            user=fill_template(self.question_template, item.values),
                            max_output_tokens=self.max_output_tokens)]

    def score(self, item: ProbeItem, texts: dict[str, list[str]]) -> list[ProbeScore]:
        holds = item.reference.casefold() in texts["greedy"][0].casefold()
        return [ProbeScore(metric="holds_reference", value=float(holds))]


def build(context: ProbeContext, **options: Any) -> ToyProbe:
    return ToyProbe(system=context.system_prompt, question_template=context.question_template,
                    **options)


def part(store: Store, contrast: tuple[str, str]) -> dict[str, Any] | None:
    chosen = chosen_params(store, KIND)
    if chosen is None:
        return None
    frame = score_frame(store, KIND, chosen["params_sha256"])
    shares = frame.groupby(["model", "subset"])["value"].agg(["count", "mean"]).reset_index()
    return {**chosen, "rows": [{"model": r.model, "subset": r.subset, "n": int(r.count),
                                "share": float(r.mean)} for r in shares.itertuples()]}


def section(part: dict[str, Any], report: Report) -> Section:
    rows = [[r["model"], r["subset"], str(r["n"]), fmt_pct(r["share"])] for r in part["rows"]]
    table = Table(["Model", "Subset", "Items", "Holds the reference"], rows,
                  "Toy probe per model and subset.", "probe_toy_by_model_subset")
    return Section("Probe: toy (greedy answer holds the reference)", ["A toy."], [table], [FIGURE])


def tidy(part: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {"probe_toy_by_model_subset": part["rows"]}


def draw(report: Report) -> Figure:
    rows = report.probes[KIND]["rows"]
    figure = Figure()
    figure.add_subplot().bar([f"{r['model']} {r['subset']}" for r in rows], [r["share"] for r in rows])
    return figure


TOY = ProbeSpec(
    name=KIND, summary="toy: does the greedy answer hold the reference",
    options=(ProbeOption("max_output_tokens", int, 32, "output limit (default 32)"),),
    build=f"{__name__}:build", part=f"{__name__}:part", section=f"{__name__}:section",
    tidy=f"{__name__}:tidy", figures=(ProbeFigure(FIGURE, f"{__name__}:draw", f"{__name__}:CAPTION"),))

# -- the tests ------------------------------------------------------------------------------------


def _references(spec: ProbeSpec) -> list[str]:
    """Every dotted path a spec names."""
    return [spec.build, spec.part, spec.section, spec.tidy,
            *(path for figure in spec.figures for path in (figure.draw, figure.caption))]


def _files(spec: ProbeSpec) -> set[str]:
    """The source files of a probe's slice: the modules its spec names, as repository paths."""
    return {ref.partition(":")[0].removeprefix("contam.").replace(".", "/") + ".py" for ref in _references(spec)}


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(PROBES, KIND, TOY)
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


def test_the_toy_probe_runs_end_to_end_from_one_module_and_one_entry(tmp_path, toy, contam):
    store = tmp_path / "s.duckdb"
    knowledge = Knowledge.from_file(demo_items_path(), profile="contaminated")
    with run_emulator(EmulatorSettings(knowledge=knowledge)) as emu:
        config = demo_config(tmp_path, [model_entry("openai", emu, name="dirty")])
        status, out, err = contam("probe", KIND, config, "--store", store, "--no-progress",
                                  "--max-output-tokens", "24")
    assert status == 0, err
    assert "18 cells scored" in out  # the 18 demo items, one model
    with Store(store, read_only=True) as opened:
        params = opened.query("SELECT params FROM probe_params WHERE probe = 'toy'")
        shares = dict(opened.query(
            "SELECT i.subset, avg(s.value) FROM latest_probe_scores s JOIN latest_items i "
            "USING (item_id) WHERE s.probe = 'toy' GROUP BY ALL"))
    assert [json.loads(p)["max_output_tokens"] for (p,) in params] == [24]  # its option, a flag
    assert shares["official"] > shares["fan"]  # the contaminated model knows the documented items

    status, _, err = contam("report", "--store", store, "--out", tmp_path / "report")
    assert status == 0, err
    folder = tmp_path / "report"
    md = (folder / "report.md").read_text("utf-8")
    assert "## Probe: toy (greedy answer holds the reference)" in md and CAPTION in md
    assert (folder / f"{FIGURE}.png").read_bytes().startswith(PNG)
    assert FIGURE in (folder / "report.html").read_text("utf-8")
    table = pd.read_csv(folder / "tables" / "probe_toy_by_model_subset.csv")
    assert table.set_index("subset")["share"].to_dict() == pytest.approx(shares)
    report = json.loads((folder / "report.json").read_text("utf-8"))
    assert {r["subset"] for r in report["probes"][KIND]["rows"]} == {"official", "fan"}


def test_the_command_line_lists_the_toy_with_its_options(toy, capsys):
    from contam.harness.cli import main

    with pytest.raises(SystemExit):
        main(["probe", KIND, "--help"])
    out = capsys.readouterr().out
    assert "--max-output-tokens MAX_OUTPUT_TOKENS" in out and "--batch" in out


def test_a_new_probe_touches_one_module_and_one_registry_entry():
    """Everything the toy's spec names is in this one module; the registry knows nothing of it
    until the test registers it."""
    assert {ref.partition(":")[0] for ref in _references(TOY)} == {__name__}
    assert KIND not in PROBES


def _named_kinds(path: Path) -> set[str]:
    """The probe kinds a source file names as a string of its own (``"cdd"``, or SQL's
    ``= 'cdd'``): where it dispatches on, or lists, probes."""
    named = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            named |= {kind for kind in PROBES if node.value == kind
                      or re.search(rf"= '{re.escape(kind)}'", node.value)}
    return named


# Named outside their slices, on purpose: the API keeps `probe_min_k` (probe("min-k") with k), and
# the provenance paragraph quotes min-k's own bootstrap settings beside the report's.
_ALSO = {"harness/api.py": {"min-k"}, "harness/report/texts/provenance.py": {"min-k"}}
_REGISTRY = "metrics/probe_registry.py"


def test_each_probe_is_named_only_by_the_registry_and_its_own_modules():
    sources = [p for package in ("harness", "metrics", "providers") for p in (ROOT / package).rglob("*.py")]
    named = {p.relative_to(ROOT).as_posix(): kinds for p in sources if (kinds := _named_kinds(p))}
    for file, kinds in named.items():
        outside = {kind for kind in kinds if file not in _files(PROBES[kind]) | {_REGISTRY}}
        assert outside <= _ALSO.get(file, set()), (file, outside)
    assert [file for file, kinds in named.items() if len(kinds) > 1] == [_REGISTRY]  # one registry
    assert named[_REGISTRY] == set(PROBES)
