"""Each command's options are declared once: a field of its options dataclass is its flag on the
command line, a keyword of the Python API and an option the job reads. A toy option added to one
file (a copy of the code) shows all three; the flags' spelling shows that nothing else declares
them again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

import pytest

from contam.harness.cli import OneLineParser, parse_args
from contam.harness.cli.flags import add_options
from contam.harness.declare import flag_of, from_args, option
from contam.harness.jobs.options.score import RayOptions, ScoreOptions
from tests.flagcount import ROOT, spelled_outside_declarations

TOY_FIELD = '    toy: int = option("--toy", default=0, type=int, help="a toy option, declared once")\n'
ANCHOR = "    progress: bool = progress_option()"

# Run in the copy: the toy through `contam score --help`, through `contam score --toy 7` into the
# job (its `score` replaced by a recorder), and as score_store's keyword on an empty real store.
TOY_PROBE = """
import contextlib, io, json, sys
import contam.harness.jobs.score as job
from contam.harness.cli import main, parse_args
from contam.harness.store import Store

seen = {}


def recorded(*, store, options):
    seen["job"] = options.toy
    return []


job.score = recorded
shown = io.StringIO()
with contextlib.redirect_stdout(shown), contextlib.suppress(SystemExit):
    parse_args(["score", "--help"])
status = main(["score", "--toy", "7", "--store", sys.argv[1]])
with Store(sys.argv[1], create=True) as store:
    summaries = job.score_store(store, ["bleu2"], toy=5)
print(json.dumps({"help": shown.getvalue(), "status": status, "job": seen["job"],
                  "keyword": [s.metric for s in summaries]}))
"""


@pytest.fixture
def toy_copy(tmp_path):
    """The code with one change: the toy field in the score options' declaration."""
    for package in ("contam", "harness", "metrics", "providers"):
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    declaration = tmp_path / "harness/jobs/options/score.py"
    text = declaration.read_text(encoding="utf-8")
    assert text.count(ANCHOR) == 1
    declaration.write_text(text.replace(ANCHOR, TOY_FIELD + ANCHOR), encoding="utf-8")
    return tmp_path


def test_a_toy_option_declared_in_one_file_is_a_flag_a_job_option_and_an_api_keyword(toy_copy):
    env = {**os.environ, "PYTHONPATH": str(toy_copy), "COLUMNS": "100"}
    done = subprocess.run([sys.executable, "-c", TOY_PROBE, str(toy_copy / "s.duckdb")],
                          cwd=toy_copy, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert "--toy TOY             a toy option, declared once" in seen["help"]
    assert (seen["status"], seen["job"]) == (0, 7)
    assert seen["keyword"] == ["bleu2"]  # score_store(..., toy=5) took it as an option


def test_the_parsed_line_becomes_the_jobs_options_with_each_flag_converted():
    args = parse_args(["score", "--metric", "bleu2", "--metric", "exact,contains", "--no-rescale",
                       "--ray", "--bertscore-layers", "5"])
    options = from_args(ScoreOptions, args)
    assert options.metrics == ["bleu2", "exact,contains"]
    assert (options.rescale, options.layer, options.ray) == (False, 5, RayOptions("local"))
    assert from_args(ScoreOptions, parse_args(["score"])) == ScoreOptions(progress=False)


def test_a_message_names_a_flag_through_its_declaration():
    assert flag_of(ScoreOptions, "layer") == "--bertscore-layers"
    assert flag_of(ScoreOptions, "rescale") == "--no-rescale"


# What still spells a flag outside the declarations, and why it may: the leaf packages (metrics/,
# providers/) cannot import harness's declarations (their help and errors name the flag of the
# option they read); the rest are commands printed for the user to run next (init's README, the
# demo's closing lines, config's resume hint, a flag of `contam run` or `contam emulator` rather
# than of the command at hand) and help text kept with the emulator's skill model. The report's
# and the store's messages take their flags from the declarations (flag_of). Nothing may join
# this list.
STILL_SPELLED_ELSEWHERE = {
    "--alpha": {"metrics/probe_cdd.py"}, "--samples": {"metrics/probe_cdd.py"},
    "--temperature": {"metrics/probe_cdd.py"}, "--xi": {"metrics/probe_cdd.py"},
    "--dataset": {"metrics/probe_guided.py"}, "--split": {"metrics/probe_guided.py"},
    "--k": {"metrics/probe_mink.py"},
    "--max-output-tokens": {"metrics/probe_cdd.py", "metrics/probe_guided.py",
                            "metrics/probe_tsguess.py"},
    "--baseline": {"metrics/bertscore.py"}, "--bertscore-layers": {"metrics/bertscore.py"},
    "--bertscore-model": {"metrics/bertscore.py"}, "--no-rescale": {"metrics/bertscore.py"},
    "--token-budget": {"metrics/bertscore.py"}, "--device": {"metrics/bertscore_encoder.py"},
    "--precision": {"metrics/bertscore_encoder.py"},
    "--as": {"providers/local.py"}, "--model": {"providers/local.py"},
    "--exposure": {"harness/emulator/items.py", "harness/jobs/init.py"},
    "--items": {"harness/emulator/skill.py", "harness/jobs/init.py"},
    "--out": {"harness/jobs/demo.py", "harness/jobs/init.py"},
    "--store": {"harness/config.py", "harness/jobs/demo.py", "harness/jobs/init.py"},
}


def test_no_flag_is_spelled_outside_its_declaration_beyond_the_listed_texts():
    outside = spelled_outside_declarations()
    grown = {flag: paths - STILL_SPELLED_ELSEWHERE.get(flag, set())
             for flag, paths in outside.items()}
    assert {flag: paths for flag, paths in grown.items() if paths} == {}



def test_a_computed_help_is_computed_when_the_parser_is_built():
    @dataclass(frozen=True, kw_only=True)
    class Computed:
        names: str | None = option("--names", help=lambda: "one of " + ", ".join(["a", "b"]))

    parser = OneLineParser(prog="toy")
    add_options(parser, Computed)
    assert "--names NAMES  one of a, b" in parser.format_help()
    assert from_args(Computed, parser.parse_args(["--names", "a"])) == Computed(names="a")
