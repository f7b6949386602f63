"""The docs' study walkthroughs (docs/tutorials/python-apis.md, docs/how-to/providers.md,
docs/how-to/report.md, docs/how-to/probes.md), followed line by line as written (tests.walkthroughkit), and
again on partial data: the second worked study (examples/python-apis) as written, without its
judge step, and with human labels for two of its four models; the keyless emulator walkthrough
and the exposure walkthrough, each against the numbers the README states for it. (Every
walkthrough ends in its report, whichever models have labels.)"""

from __future__ import annotations

import json
import re
import shlex
import struct
from pathlib import Path

import pytest

from contam.harness.store import Store
from tests.walkthroughkit import ROOT, Walkthrough, bash_block, section

DOCS = ROOT / "docs"
PAGE = {"### A second worked study": DOCS / "tutorials" / "python-apis.md",
        "### `contam run`": DOCS / "how-to" / "providers.md",
        "### Exposure, cut-offs and tiers": DOCS / "how-to" / "report.md",
        "### `min-k`": DOCS / "how-to" / "probes.md"}


def page_section(heading: str) -> str:
    """``heading``'s section of the docs page that holds it."""
    return section(heading, doc=PAGE[heading])


PYTHON_APIS = bash_block("### A second worked study", doc=PAGE["### A second worked study"])
EMULATOR = bash_block("### `contam run`", after="Try it without keys against the emulator",
                      doc=PAGE["### `contam run`"])
EXPOSURE = bash_block("### Exposure, cut-offs and tiers", after="is a worked example",
                      doc=PAGE["### Exposure, cut-offs and tiers"])
MODELS = ("claude-emu", "gemini-emu", "gemma-emu", "gpt-emu")


def readme_table(heading: str, marker: str = "-emu") -> dict[str, list[str]]:
    """The rows of a README table in ``heading``'s section, by their first cell's first word."""
    rows = ([cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in page_section(heading).splitlines() if line.startswith("| ") and marker in line)
    return {cells[0].split()[0]: cells[1:] for cells in rows}


def printed_table(out: str) -> list[list[str]]:
    """The rows `contam sql` drew (its box-drawn table)."""
    return [[cell.strip() for cell in line.strip("│").split("│")]
            for line in out.splitlines() if line.startswith("│")]


def without(lines: list[str], command: str) -> list[str]:
    return [line for line in lines if command not in line]


def as_json(lines: list[str]) -> list[str]:
    """The walkthrough with its report printed as JSON (no figures to draw) instead of written."""
    return [re.sub(r"--out \S+", "--format json", line) if "contam report" in line else line
            for line in lines]


@pytest.fixture
def walk(tmp_path, contam, monkeypatch):
    walkthrough = Walkthrough(tmp_path, contam, monkeypatch)
    yield walkthrough
    walkthrough.close()


# -- A second worked study: Python standard library APIs ------------------------------------

def test_the_python_apis_walkthrough_as_written_ends_in_its_report(walk):
    walk.follow(PYTHON_APIS)
    report = json.loads(Path("runs/python-apis-report/report.json").read_bytes())
    assert report["contrast"] == {"documented": "popular", "undocumented": "obscure"}  # its tiers
    assert report["judge_rater"] == "judge:judge-emu" and [r["n"] for r in report["judge"]] == [66] * 4
    gap = {row["model"]: row for row in report["judge_gap"]}
    assert set(gap) == set(MODELS)
    assert sum(r["documented_accuracy"] > r["undocumented_accuracy"] for r in gap.values()) >= 3
    assert report["exposure"]["correct"] == {"human": 0, "judge": 264, "unanswered": 0, "unlabelled": 0}
    assert all(row["odds_ratio"] > 1 for row in report["exposure"]["per_model"])
    assert [r["model"] for r in report["cutoff"]["per_model"]] == ["claude-emu", "gemini-emu",
                                                                    "gemma-emu", "gpt-emu"]
    assert Path("runs/python-apis-report/fig5_exposure.png").stat().st_size > 0
    assert (Path("my-study") / "study.toml").is_file()  # `contam init`, the walkthrough's first line
    shares = {row[0]: {} for row in printed_table(walk.step("sql").out)}
    for model, subset, exact in printed_table(walk.step("sql").out):
        shares[model][subset] = exact
    table = readme_table("### A second worked study")
    assert {m: [shares[m][t] for t in ("popular", "niche", "obscure")] for m in shares} == table
    _the_views_report_is_the_same_study(Path("runs/python-apis.duckdb"))
    _the_readmes_transcript_is_what_it_printed(walk)
    _the_readmes_figure_is_a_png_like_the_one_written(Path("runs/python-apis-report/fig5_exposure.png"))


def transcript(heading: str) -> list[tuple[str, str]]:
    """The ``$ command`` lines of the first ```text block of ``heading``'s section, each with the
    lines printed under it."""
    block = re.search(r"```text\n(.*?)```", page_section(heading), re.DOTALL).group(1)
    return [(command, printed.strip("\n")) for command, printed in
            re.findall(r"^\$ (.*)\n((?:(?!\$ ).*\n)*)", block, re.MULTILINE)]


def _the_readmes_transcript_is_what_it_printed(walk: Walkthrough) -> None:
    """Each transcribed command is a line of the walkthrough, and what the README shows under it
    is what that step printed now (stdout, then stderr, as a terminal shows them)."""
    shown = transcript("### A second worked study")
    assert [shlex.split(command)[1] for command, _ in shown] == ["report", "sql"]
    walked = [shlex.split(line, comments=True) for line in PYTHON_APIS]
    for command, printed in shown:
        assert shlex.split(command) in walked, command
        step = walk.step(shlex.split(command)[1])
        assert printed == (step.out + step.err).strip("\n"), command


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"  # a PNG, its header first
    return struct.unpack(">II", data[16:24])


def _the_readmes_figure_is_a_png_like_the_one_written(written: Path) -> None:
    """The section's image is a PNG in docs/, the size of the Exposure figure the report drew."""
    [link] = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page_section("### A second worked study"))
    image = (PAGE["### A second worked study"].parent / link).resolve()
    assert image.parent == DOCS and image.suffix == ".png"
    assert image.is_file() and image.stat().st_size < 300_000
    assert _png_size(image.read_bytes()) == _png_size(written.read_bytes())


def _the_views_report_is_the_same_study(store: Path) -> None:
    """`contam view`'s /report reads the study from the newest run too: its tiers, not the paper's."""
    from tests.viewkit import report_page, view_client

    client = view_client(store)
    try:
        page = report_page(client, "/report").text
    finally:
        client.close()
    assert "Contrast: popular (documented) vs obscure (undocumented)" in page
    assert "official" not in page


def test_the_python_apis_walkthrough_without_its_judge_step_still_reports(walk):
    """No judge and no human labels: the report says so and keeps what needs no labels."""
    walk.follow(as_json(without(PYTHON_APIS, "contam judge")))
    report = json.loads(walk.step("report").out)
    assert (report["human_rater"], report["judge_rater"]) == (None, None)
    assert report["contrast"] == {"documented": "popular", "undocumented": "obscure"}
    assert sorted(row["accuracy"] for row in report["rule_accuracy"]) == [  # models in outcome order
        pytest.approx(0.4242, abs=1e-4), pytest.approx(0.5, abs=1e-4),
        pytest.approx(0.5606, abs=1e-4), pytest.approx(0.6364, abs=1e-4)]  # exact, from `contam score`
    assert report.get("exposure") is None or report["exposure"]["correct"].get("judge", 0) == 0  # no judge
    assert any("no judge labels" in row["reason"] for row in report["not_in_report"])


def test_the_python_apis_walkthrough_with_labels_for_two_models_and_a_judge_for_one(walk):
    """Human labels for two of the four models and a judge for one: every section reports over the
    models it has, and names the others."""
    lines = as_json(without(PYTHON_APIS, "contam judge"))
    run = next(n for n, line in enumerate(lines) if line.startswith("contam run"))
    walk.follow(lines[: run + 1])
    with Store(Path("runs/python-apis.duckdb"), read_only=True) as store:
        answers = store.query("SELECT a.item_id, a.model, a.answer = i.reference || '.' "
                              "FROM latest_answers a JOIN latest_items i USING (item_id) "
                              "WHERE a.model IN ('gpt-emu', 'claude-emu') ORDER BY 1, 2")
    labels = ["item_id,model,rater,label"] + [f"{i},{m},human,{'Right' if hit else 'Wrong'}"
                                              for i, m, hit in answers]
    Path("human.csv").write_text("\n".join(labels) + "\n", encoding="utf-8")
    walk.follow(["contam import labels human.csv --store runs/python-apis.duckdb",
                 "contam judge examples/python-apis/study.toml --models gemma-emu",
                 *lines[run + 1:]])
    report = json.loads(walk.step("report").out)
    assert report["meta"]["unlabelled"] == {"human": ["gemini-emu", "gemma-emu"],
                                            "judge": ["claude-emu", "gemini-emu", "gpt-emu"]}
    assert {row["model"] for row in report["gap"]} == {"claude-emu", "gpt-emu"}
    assert {row["model"] for row in report["judge"]} == {"gemma-emu"}
    assert report["exposure"]["correct"] == {"human": 132, "judge": 66, "unanswered": 0,
                                             "unlabelled": 66}
    assert {row["model"] for row in report["exposure"]["per_model"]} >= {"claude-emu", "gpt-emu",
                                                                       "gemma-emu"}


# -- The emulator walkthrough: `contam run` without keys ---------------------------------------

def test_the_emulator_walkthrough_as_written_gives_the_readmes_numbers(walk):
    walk.follow(EMULATOR)
    assert Path("runs/emulator_report/report.json").is_file()
    with Store(Path("runs/emulator.duckdb"), read_only=True) as store:
        rows = store.query("SELECT model, subset, round(avg(bleu2), 3), "
                           "round(avg((judge_label = 'right')::int), 3), count(bertscore_f1) "
                           "FROM cells GROUP BY ALL ORDER BY ALL")
    measured: dict[str, dict[str, list[float]]] = {}
    for model, subset, bleu2, right, scored in rows:
        assert scored == (10 if subset == "official" else 8)  # BERTScore scored every answer
        measured.setdefault(model, {})[subset] = [bleu2, right]
    table = readme_table("### `contam run`")  # skill, official BLEU-2 and right, fan BLEU-2 and right
    assert {model: [float(cell) for cell in cells[1:]] for model, cells in table.items()} == {
        model: by_subset["official"] + by_subset["fan"] for model, by_subset in measured.items()}


# -- Exposure, cut-offs and tiers ----------------------------------------------------------------

def test_the_exposure_walkthrough_as_written_gives_the_readmes_numbers(walk):
    walk.follow(EXPOSURE)
    report = json.loads(Path("runs/exposure_report/report.json").read_bytes())
    per_model = {row["model"]: row for row in report["exposure"]["per_model"]}
    stated = " ".join(page_section("### Exposure, cut-offs and tiers").split())
    readme_numbers = {"emu-2024": ("7.31", "1.83", "29.3"), "emu-2022": ("1.46", "0.71", "3.01")}
    for model, (odds, low, high) in readme_numbers.items():
        row = per_model[model]
        measured = (f"{row['odds_ratio']:.2f}", f"{row['ci_low']:.2f}", f"{row['ci_high']:.3g}")
        assert measured == (odds, low, high), model
        assert odds in stated and low in stated and high in stated
    assert per_model["emu-2024"]["lr_p"] < 0.001 and round(per_model["emu-2022"]["lr_p"], 2) == 0.30
    tiers = {(r["model"], r["subset"]): round(100 * r["accuracy"]) for r in report["tiers"]["per_tier"]}
    assert [tiers["emu-2024", s] for s in ("official", "reference", "changelog")] == [100, 10, 10]
    assert [tiers["emu-2022", s] for s in ("official", "reference", "changelog")] == [50, 30, 30]
    assert "100% → 10% → 10% and 50% → 30% → 30%" in stated
    trend = {row["model"]: f"{row['z']:.2f}".replace("-", "−") for row in report["tiers"]["trend"]}
    assert trend == {"emu-2024": "−4.11", "emu-2022": "−0.93"}
    assert "Z = −4.11 and −0.93" in stated
    assert [round(row["fisher_p"], 2) for row in report["cutoff"]["per_model"]] == [1.0, 1.0]


# -- min-k on the packaged SmolLM2 ---------------------------------------------------------------

@pytest.mark.slow
def test_the_min_k_example_as_written_gives_the_readmes_roc_auc(walk):
    """`contam probe min-k examples/min-k.toml` (the README's runnable line; the other shows the
    options), then the report, whose ROC-AUCs the README states."""
    block = bash_block("### `min-k`", doc=PAGE["### `min-k`"])
    [line] = [line for line in block if "examples/min-k.toml" in line]
    walk.follow([line, "contam report --store runs/min-k.duckdb --format json"])
    assert "smollm2-135m-instruct: 18/18 texts scored" in walk.step("probe").out
    rows = {row["metric"]: row for row in json.loads(walk.step("report").out)["probes"]["min-k"]["rows"]}
    stated = " ".join(page_section("### `min-k`").split())
    for metric, name in (("min_k", "Min-K%"), ("min_k_pp", "Min-K%++")):
        row = rows[metric]
        auc = f"{row['auc']:.2f} [{row['auc_ci_low']:.2f}, {row['auc_ci_high']:.2f}]"
        assert f"{name} ROC-AUC {auc}" in stated or f"{name} {auc}" in stated, (name, auc)
    p_values = [f"{rows[metric]['mannwhitney_p']:.2f}" for metric in ("min_k", "min_k_pp")]
    assert "p {} and {}".format(*p_values) in stated
