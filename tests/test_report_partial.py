"""Every report section on stores where some models, subsets or raters have no labels, no judge or
no scores, and combinations of these: the report builds, and every part of it
(report.json/md/html, tables/*.csv and .tex, every figure) is written. McNemar and the tests
between models run over the models the human rater labelled; the others are named as unlabelled."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import orjson
import pytest
from markupsafe import escape
from scipy import stats as sps

from contam.harness.report.model import Report
from contam.harness.jobs.report import write_report
from contam.harness.report.analysis import build_report
from contam.harness.report.texts.markdown import sections
from contam.harness.store import Store, utc_now

MODELS = ("m1", "m2", "m3", "m4")
ITEMS = [(f"d{n}", f"Doc {'AB'[n % 2]}", "canon") for n in range(6)] + \
        [(f"u{n}", f"Hack {'AB'[n % 2]}", "hack") for n in range(6)]
CANON = {i for i, _, s in ITEMS if s == "canon"}
HACK = {i for i, _, s in ITEMS if s == "hack"}
EVERY = CANON | HACK
CONTRAST = ("canon", "hack")


def label_of(item: str, model: str, salt: int = 0) -> str:
    """Documented items mostly right, undocumented mostly wrong, varied by model and rater."""
    n = int(item[1:]) + MODELS.index(model) + salt
    if item in CANON:
        return ("right", "right", "partial", "wrong")[n % 4]
    return ("wrong", "right", "wrong", "partial", "wrong")[n % 5]


@dataclass
class Case:
    """A store: ``human`` rater -> model -> items labelled; ``judge``: model -> items;
    ``scores``: metric -> models scored; ``empty`` / ``unanswered``: (item, model) cells;
    ``probes``: probe kind -> model -> items scored."""

    human: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    judge: dict[str, set[str]] = field(default_factory=dict)
    scores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    empty: set[tuple[str, str]] = field(default_factory=set)
    unanswered: set[tuple[str, str]] = field(default_factory=set)
    probes: dict[str, dict[str, set[str]]] = field(default_factory=dict)


CASES = {
    "human on two of four models (the reported case)": Case(
        human={"human": {"m1": EVERY, "m2": EVERY}}, judge={m: EVERY for m in MODELS},
        scores={"bleu2": MODELS, "bertscore_f1": MODELS}),
    "one imported label in a four-model store": Case(human={"human": {"m1": {"d0"}}}),
    "human on one subset per model, a judge on others, scores for one": Case(
        human={"human": {"m1": EVERY, "m2": CANON, "m3": HACK}}, judge={"m3": EVERY, "m4": CANON},
        scores={"bleu2": ("m1",)}),
    "two raters overlapping, none covering every model": Case(
        human={"human:alice": {"m1": EVERY, "m2": CANON}, "human:bob": {"m2": EVERY, "m3": HACK | {"d0"}},
               "human:adjudicated": {"m2": {"d1"}}},
        scores={"bleu2": MODELS}),
    "unlabelled models with empty and missing answers": Case(
        human={"human": {"m1": EVERY, "m2": EVERY - {"u5"}}},
        empty={("d0", "m3"), ("u1", "m3"), ("d2", "m1")}, unanswered={("u0", "m4"), ("d1", "m2")},
        judge={"m1": EVERY, "m3": {"d0", "d3"}}),
    "a judge on one model and no human": Case(judge={"m2": EVERY}, scores={"bertscore_f1": ("m2", "m3")}),
    "scores for one model only, no labels": Case(scores={"bleu2": ("m4",)}),
    "human on one model, every probe on some models and subsets": Case(
        human={"human": {"m1": EVERY}}, scores={"bleu2": ("m1", "m2")},
        probes={"cdd": {"m1": CANON, "m2": EVERY}, "ts-guess": {"m2": HACK, "m3": EVERY},
                "guided": {"m1": {"d0", "u0"}, "m4": EVERY}, "min-k": {"m3": CANON | {"u0", "u1"}}}),
}


def build_store(path: Path, case: Case) -> Path:
    now = utc_now()
    answers = [{"item_id": i, "model": m, "answer": "" if (i, m) in case.empty else f"answer {i} {m}",
                "answer_raw": "x", "created_at": now} for i, _, _ in ITEMS for m in MODELS
               if (i, m) not in case.unanswered]
    labels = [{"item_id": i, "model": m, "rater": rater, "label": label_of(i, m, salt), "created_at": now}
              for salt, (rater, per_model) in enumerate(case.human.items())
              for m, items in per_model.items() for i in sorted(items)]
    labels += [{"item_id": i, "model": m, "rater": "judge:j", "label": label_of(i, m, 7), "created_at": now}
               for m, items in case.judge.items() for i in sorted(items)]
    scores = [{"item_id": i, "model": m, "metric": metric, "value": 0.7 if label_of(i, m) == "right" else 0.2,
               "created_at": now} for metric, models in case.scores.items() for m in models
              for i, _, _ in ITEMS if (i, m) not in case.unanswered]
    with Store(path, create=True) as store, store.transaction():
        store.append("items", [{"item_id": i, "title": t, "subset": s, "question": f"Question {i}?",
                                "reference": "ref", "added_at": now} for i, t, s in ITEMS])
        store.append("answers", answers)
        store.append("labels", labels)
        store.append("scores", scores)
        _append_probes(store, case.probes)
    return path


_PROBE_PARAMS = {"cdd": {"samples": 4, "temperature": 0.8, "alpha": 0.05, "xi": 0.01},
                 "ts-guess": {"rule": "rarest"}, "guided": {"dataset": "d", "split": "test"},
                 "min-k": {"k": 0.2, "logprobs": "forward"}}


def _probe_metrics(kind: str, item: str, model: str) -> dict[str, float]:
    n = int(item[1:]) + MODELS.index(model)
    seen = item in CANON
    return {"cdd": {"peakedness": (n % 4) / 4, "flagged": float(seen and n % 2 == 0)},
            "ts-guess": {"exact_match": float(seen and n % 3 != 0)},
            "guided": {"rouge_l_guided": 0.5 + 0.1 * (n % 3), "rouge_l_general": 0.4 + 0.05 * (n % 4),
                       "bleu2_guided": 0.3 + 0.1 * (n % 2), "bleu2_general": 0.3},
            "min-k": {"min_k": -2.0 + seen + 0.1 * n}}[kind]


# ts-guess's reply to the mask, one word: a model that fills masks (else the probe does not apply).
_DETAILS = {"ts-guess": json.dumps({"reply": "cerulean"})}


def _append_probes(store: Store, probes: dict[str, dict[str, set[str]]]) -> None:
    for kind, per_model in probes.items():
        sha = f"{sorted(_PROBE_PARAMS).index(kind)}" * 64
        store.append("probe_params", [{"params_sha256": sha, "probe": kind,
                                       "params": json.dumps(_PROBE_PARAMS[kind])}])
        store.append("probe_scores", [
            {"run_id": "p", "probe": kind, "params_sha256": sha, "item_id": i, "model": m,
             "metric": metric, "value": value, "detail": _DETAILS.get(kind)}
            for m, items in per_model.items() for i in sorted(items)
            for metric, value in _probe_metrics(kind, i, m).items()])


@pytest.fixture(scope="module", params=list(CASES), ids=lambda name: name.replace(" ", "_"))
def written(request, tmp_path_factory):
    """(case, report, the report folder) for each case: built and written once."""
    folder = tmp_path_factory.mktemp("partial")
    case = CASES[request.param]
    with Store(build_store(folder / "s.duckdb", case), read_only=True) as store:
        report = build_report(store, contrast=CONTRAST)
    write_report(report, folder / "out")
    return case, report, folder / "out"


def chosen_human(case: Case, report: Report) -> dict[str, set[str]]:
    return case.human.get(report.human_rater, {}) if report.human_rater else {}


# -- every part is written ----------------------------------------------------------------------

def test_every_section_renders_in_every_format(written):
    _, report, out = written
    assert orjson.loads((out / "report.json").read_bytes())["meta"]["models"] == len(MODELS)
    md, page = (out / "report.md").read_text("utf-8"), (out / "report.html").read_text("utf-8")
    built = sections(report)
    for section in built:
        assert f"## {section.heading}" in md or md.startswith(f"# {section.heading}")
        assert str(escape(section.heading)) in page
        for table in section.tables:
            assert (out / "tables" / f"{table.name}.csv").stat().st_size > 0, table.name
            assert (out / "tables" / f"{table.name}.tex").read_text("utf-8").count(r"\toprule") == 1
        for figure in section.figures:
            assert (out / f"{figure}.png").stat().st_size > 1000 and (out / f"{figure}.pdf").exists()
            assert f'alt="{figure}"' in page
    assert not re.search(r"\b(nan|NaN|None)\b", md)  # an undefined number prints as a dash


def test_human_sections_cover_exactly_the_labelled_models(written):
    case, report, _ = written
    labelled = set(chosen_human(case, report))
    if not labelled:
        assert report.overall is None and report.mcnemar is None
        return
    assert {r["model"] for r in report.overall} == labelled
    assert {r["model"] for r in report.per_title} <= labelled
    assert {r["model"] for r in report.abstention} <= labelled
    assert set(report.meta["unlabelled"]["human"]) == set(MODELS) - labelled
    both_sides = {m for m, items in chosen_human(case, report).items()
                  if _imputed_or(items, m, case) & CANON and _imputed_or(items, m, case) & HACK}
    assert {r["model"] for r in report.gap} == both_sides


def _imputed_or(items: set[str], model: str, case: Case) -> set[str]:
    """The items a labelled model has an effective label on: its labels, and its blank or missing
    answers (wrong by the lower-bound rule)."""
    blank = {i for i, m in case.empty | case.unanswered if m == model}
    return items | blank


def test_unlabelled_models_are_named_in_the_report(written):
    case, report, out = written
    unlabelled = report.meta["unlabelled"]
    md = (out / "report.md").read_text("utf-8")
    for side in ("human", "judge"):
        for model in unlabelled[side]:
            assert any(n.section == f"unlabelled.{side}" and model in n.reason for n in report.notes)
        if unlabelled[side]:
            assert f"(no labels for {', '.join(unlabelled[side])})" in md
    judged = set(case.judge)
    if report.judge:
        assert {r["model"] for r in report.judge} == judged
        assert set(unlabelled["judge"]) == set(MODELS) - judged


def test_mcnemar_runs_over_labelled_pairs_and_matches_an_exact_binomial(written):
    case, report, _ = written
    per_model = chosen_human(case, report)
    if len(per_model) < 2:
        assert not report.mcnemar
        return
    rows = {(r["model_a"], r["model_b"], r["scope"]): r for r in report.mcnemar}
    assert {m for key in rows for m in key[:2]} <= set(per_model)
    for a, b in combinations(sorted(per_model), 2):
        common = _imputed_or(per_model[a], a, case) & _imputed_or(per_model[b], b, case)
        key = (a, b, "all") if (a, b, "all") in rows else (b, a, "all")
        if not common:
            assert key not in rows
            continue
        right = {m: {i for i in common if _effective(i, m, case, per_model) == "right"} for m in (a, b)}
        row = rows[key]
        a_only, b_only = len(right[key[0]] - right[key[1]]), len(right[key[1]] - right[key[0]])
        assert (row["n"], row["a_only"], row["b_only"]) == (len(common), a_only, b_only)
        expected = sps.binomtest(a_only, a_only + b_only, 0.5).pvalue if a_only + b_only else 1.0
        assert row["p"] == pytest.approx(expected)


def _effective(item: str, model: str, case: Case, per_model: dict[str, set[str]]) -> str:
    if (item, model) in case.empty or ((item, model) in case.unanswered and item not in per_model[model]):
        return "wrong"
    salt = list(case.human).index(next(r for r, pm in case.human.items() if pm is per_model))
    return label_of(item, model, salt)


# -- the reported case, reproduced --------------------------------------------------------------

def test_cli_report_on_the_reported_cases_store_exits_0(contam, tmp_path):
    store = build_store(tmp_path / "s.duckdb", CASES["human on two of four models (the reported case)"])
    status, _, err = contam("report", "--store", store, "--contrast", "canon,hack", "--format", "md")
    assert status == 0, err
    assert "human (no labels for m3, m4)" in _  # the overview names the models left out


def test_the_views_report_page_answers_with_one_label_in_the_store(tmp_path):
    from tests.viewkit import report_page, view_client

    store = build_store(tmp_path / "s.duckdb", CASES["one imported label in a four-model store"])
    response = report_page(view_client(store), "/report?contrast=canon,hack")
    assert response.status_code == 200, response.text[-300:]
    assert "no labels for m2, m3, m4" in response.text


# -- README, "A study, step by step", with labels for some models only --------------------------

def test_the_step_by_step_study_with_labels_for_two_of_four_models_ends_in_a_report(
        contam, emulator, tmp_path, monkeypatch):
    """The README's commands as written (default store), against the emulator of its walkthrough
    (examples/emulator.toml, four models), human labels imported for two models only."""
    from contam.harness.emulator.knowledge import Knowledge
    from contam.harness.jobs.demo import demo_items_path

    emu = emulator(knowledge=Knowledge.from_file(demo_items_path()))
    example = (Path(__file__).resolve().parent.parent / "examples" / "emulator.toml").read_text("utf-8")
    study = "\n".join(line for line in example.replace("http://127.0.0.1:8765", emu.url).splitlines()
                      if not line.startswith(("store =", "items =")))
    (tmp_path / "study.toml").write_text(study, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CONTAM_EMULATOR_KEY", "anything")
    assert contam("import", "items", demo_items_path())[0] == 0
    assert contam("run", "study.toml")[0] == 0
    assert contam("score", "--metric", "bleu2")[0] == 0
    with Store(Path("runs/contam.duckdb"), read_only=True) as store:
        answered = store.query("SELECT a.item_id, a.model, i.subset FROM latest_answers a "
                               "JOIN latest_items i USING (item_id) WHERE a.model IN ('gpt-emu', 'claude-emu')")
    rows = ["item_id,model,rater,label"] + [f"{i},{m},human,{'Right' if s == 'official' else 'Wrong'}"
                                            for i, m, s in answered]
    Path("human.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert contam("import", "labels", "human.csv")[0] == 0
    assert contam("judge", "study.toml")[0] == 0
    status, _, err = contam("report", "--out", "runs/report")
    assert status == 0, err
    report = orjson.loads(Path("runs/report/report.json").read_bytes())
    assert report["meta"]["unlabelled"]["human"] == ["gemini-emu", "gemma-emu"]
    assert {(r["model_a"], r["model_b"]) for r in report["mcnemar"]} <= {("gpt-emu", "claude-emu"),
                                                                          ("claude-emu", "gpt-emu")}
    assert len(report["judge"]) == 4 and Path("runs/report/fig1_leaderboard.png").exists()
    assert "(no labels for gemini-emu, gemma-emu)" in Path("runs/report/report.md").read_text("utf-8")
