"""`contam probe min-k` end to end on a tiny local model: rows and parameters, resume, refusals."""

from __future__ import annotations

import csv
import json

import anyio
import pytest

from contam.harness.config import ModelSpec
from contam.harness.store import Store
from contam.metrics.probe_mink import min_k, min_k_pp, probe_params
from contam.metrics.probes import params_sha256
from tests.tiny_lm import tiny_model_folder

ITEMS = [("red-01", "Pokémon Red", "official", "Which badge does Brock award after his defeat?",
          "Boulder Badge"),
         ("red-02", "Pokémon Red", "official", "In which town does the player begin?", "Pallet Town"),
         ("brown-01", "Pokémon Brown", "fan", "Who is the Gym Leader in Cerulean City?", "Misty"),
         ("brown-02", "Pokémon Brown", "fan", "What is the name of the town where the player "
          "begins?", "Pallet Town, as in Pokémon Red")]


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return tiny_model_folder(tmp_path_factory.mktemp("tiny") / "tiny-lm")


def _config(folder, model_dir, *, extra_models: str = "") -> str:
    with (folder / "items.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item_id", "title", "subset", "question", "reference"])
        writer.writerows(ITEMS)
    config = folder / "probe.toml"
    config.write_text(f'store = "store.duckdb"\nitems = "items.csv"\n\n[[models]]\nname = "tiny"\n'
                      f'provider = "local"\nmodel = "{model_dir}"\nparams = {{ device = "cpu" }}\n'
                      + extra_models, encoding="utf-8")
    return str(config)


def _rows(path, sql):
    with Store(path, read_only=True) as store:
        return store.query_dicts(sql)


def test_each_item_gets_both_scores_under_recorded_parameters(tmp_path, tiny_folder, contam):
    status, out, err = contam("probe", "min-k", _config(tmp_path, tiny_folder), "--no-progress")
    assert (status, err) == (0, "")
    assert "tiny: 4/4 texts scored" in out
    store = tmp_path / "store.duckdb"
    params = probe_params(0.2, "forward")
    expected_hash = params_sha256("min-k", params)
    [recorded] = _rows(store, "SELECT * FROM probe_params")
    assert (recorded["params_sha256"], json.loads(recorded["params"])) == (expected_hash, params)
    scores = _rows(store, "SELECT * FROM probe_scores ORDER BY item_id, metric")
    assert [(r["item_id"], r["metric"]) for r in scores] == [
        (item, metric) for item in sorted(i[0] for i in ITEMS) for metric in ("min_k", "min_k_pp")]
    assert {r["params_sha256"] for r in scores} == {expected_hash}
    samples = {r["item_id"]: r for r in _rows(store, "SELECT * FROM probe_samples")}
    for row in scores:  # each score is the scorer's on the stored per-token values
        audit = json.loads(samples[row["item_id"]]["detail"])
        assert json.loads(row["detail"])["tokens"] == len(audit["tokens"]) == len(audit["logprobs"])
        value = (min_k(audit["logprobs"]) if row["metric"] == "min_k"
                 else min_k_pp(audit["logprobs"], audit["means"], audit["stds"]))
        assert row["value"] == pytest.approx(value, rel=1e-5)
    assert {r["served_model"] for r in samples.values()} == {"tiny-lm"}


def test_a_second_run_asks_nothing_and_a_limit_then_the_rest_asks_each_once(tmp_path, tiny_folder,
                                                                          contam):
    config = _config(tmp_path, tiny_folder)
    assert contam("probe", "min-k", config, "--limit", "1", "--no-progress")[0] == 0
    status, out, _ = contam("probe", "min-k", config, "--no-progress")
    assert status == 0 and "tiny: 3/3 texts scored" in out
    status, out, _ = contam("probe", "min-k", config, "--no-progress")
    assert status == 0 and "tiny: 0/0 texts scored" in out
    store = tmp_path / "store.duckdb"
    counts = _rows(store, "SELECT item_id, count(*) AS n FROM probe_samples GROUP BY item_id")
    assert sorted((r["item_id"], r["n"]) for r in counts) == sorted((i[0], 1) for i in ITEMS)
    assert len(_rows(store, "SELECT * FROM probe_params")) == 1


def test_another_k_is_another_parameter_set_scored_in_full(tmp_path, tiny_folder, contam):
    config = _config(tmp_path, tiny_folder)
    assert contam("probe", "min-k", config, "--no-progress")[0] == 0
    status, out, _ = contam("probe", "min-k", config, "--k", "0.5", "--no-progress")
    assert status == 0 and "tiny: 4/4 texts scored" in out
    params = _rows(tmp_path / "store.duckdb", "SELECT params FROM probe_params")
    assert sorted(json.loads(r["params"])["k"] for r in params) == [0.2, 0.5]


def test_models_that_cannot_score_a_text_are_refused_before_anything_is_written(
        tmp_path, tiny_folder, contam, keys):
    others = ('\n[[models]]\nname = "gpt"\nprovider = "openai"\nmodel = "gpt-5.6-sol"\n'
              '\n[[models]]\nname = "claude"\nprovider = "anthropic"\nmodel = "claude-opus-5"\n')
    status, out, err = contam("probe", "min-k", _config(tmp_path, tiny_folder, extra_models=others))
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "'gpt'" in err and "api.openai.com" in err and "'claude'" in err
    assert "'tiny'" not in err
    assert not (tmp_path / "store.duckdb").exists()


@pytest.mark.parametrize("args, message", [
    (["--k", "0"], r"--k: k must be a fraction in \(0, 1\]"),
    (["--k", "1.5"], r"--k: k must be a fraction"),
    (["--limit", "0"], "--limit must be a positive number"),
    (["--models", "nope"], "no \\[\\[models\\]\\] entry named 'nope'"),
])
def test_bad_options_are_one_line_errors(tmp_path, tiny_folder, contam, args, message):
    import re

    status, _, err = contam("probe", "min-k", _config(tmp_path, tiny_folder), *args)
    assert status == 2 and re.search(message, err) and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["probe", "--help"], ["probe", "min-k", "--help"]])
def test_the_help_names_min_k_and_its_k(args, capsys):
    from contam.harness.cli import main

    with pytest.raises(SystemExit) as done:
        main(args)
    out = capsys.readouterr().out
    assert done.value.code == 0
    assert ("--k K" in out) == (args[1] == "min-k")  # the subcommand's own flag
    assert ("Min-K% and Min-K%++" in out) == (args[1] == "--help")  # its line in the list


def test_the_api_probes_min_k_and_returns_the_summary(tmp_path, tiny_folder, capsys):
    from contam.harness import api

    options = api.MinKOptions(k=0.5, no_progress=True, limit=2, handle_signals=False)
    result = api.probe_min_k(_config(tmp_path, tiny_folder), options=options)
    assert result.exit_status == 0 and "tiny: 2/2 texts scored" in result.summary
    assert "tiny: 2/2 texts scored" not in capsys.readouterr().out  # only the display prints
    params = _rows(tmp_path / "store.duckdb", "SELECT params FROM probe_params")
    assert [json.loads(r["params"])["k"] for r in params] == [0.5]


def test_the_api_runs_min_k_as_any_probe_and_refuses_batch_mode(tmp_path, tiny_folder):
    """probe("min-k") takes k as a parameter like any probe's; --batch (requests as batch jobs)
    is refused in one line, since min-k sends none, and nothing is written."""
    from contam.harness import api
    from contam.harness.errors import UserError

    config = _config(tmp_path, tiny_folder)
    with pytest.raises(UserError, match="min-k sends none"):
        api.probe("min-k", config, options=api.ProbeOptions(batch=True, parameters={"k": 0.5}))
    assert not (tmp_path / "store.duckdb").exists()
    options = api.ProbeOptions(parameters={"k": 0.5}, limit=1, no_progress=True,
                               handle_signals=False)
    assert api.probe("min-k", config, options=options).exit_status == 0
    params = _rows(tmp_path / "store.duckdb", "SELECT params FROM probe_params")
    assert [json.loads(r["params"])["k"] for r in params] == [0.5]


def test_the_scorer_face_keeps_the_providers_served_model_check(tiny_folder):
    """TextScorer answers the engine's generate with the wrapped provider's scores."""
    from contam.harness.jobs.probe_text import ScoredReply, TextScorer
    from contam.providers.base import Request
    from contam.providers.local import LocalProvider
    from contam.providers.registry import check_first_reply

    provider = LocalProvider(ModelSpec(name="tiny", provider="local", model=str(tiny_folder)))
    scorer = TextScorer(provider)
    reply = anyio.run(scorer.generate, Request(system="", user="pokémon red which badge"))
    assert isinstance(reply, ScoredReply) and len(reply.scored.logprobs) == 3
    check_first_reply(scorer, reply)
    assert scorer.served_model_id() == provider.served_model_id() == "tiny-lm"
