"""`contam plant` on a tiny model built in the test: deterministic weights on the CPU, the
plantings record, the reuse of a saved model, the stratified seeded share, the refusal of a model
that is not local, and interrupted plants (an exception, kill -9) that leave nothing usable."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from contam.harness.errors import UserError
from contam.harness.jobs import plant_train
from contam.harness.jobs.plant import PlantOptions, choose_planted, plant
from contam.harness.store import Store
from contam.harness.store.plantings import plantings
from contam.metrics.probes import ProbeItem
from contam.providers.base import Fatal
from contam.providers.local import resolve_local_model
from contam.providers.local_cache import PLANTED_MARKER, planted_dir, planted_root
from tests.plantkit import item_words, plant_config, tiny_folder, write_items

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def study(tmp_path, monkeypatch):
    """A config over 12 items whose model ``base`` is a tiny local model; the model cache in tmp."""
    monkeypatch.setenv("CONTAM_CACHE_DIR", str(tmp_path / "cache"))
    items = write_items(tmp_path / "items.csv")
    model = tiny_folder(tmp_path / "tiny", item_words(items))
    return plant_config(tmp_path / "study.toml", items=items, model=str(model),
                        store=tmp_path / "s.duckdb")


def options(**changes) -> PlantOptions:
    return PlantOptions(**{"model": "base", "name": "p", "epochs": (2,), **changes})


def test_two_plants_with_the_same_seed_give_the_same_weights(study):
    first = plant(study, options=options(name="one"))
    second = plant(study, options=options(name="two"))
    with Store(json_store(study), read_only=True) as store:
        rows = {row["name"]: row for row in plantings(store)}
    assert first.names == ["planted:one"] and second.names == ["planted:two"]
    assert rows["planted:one"]["weights_sha256"] == rows["planted:two"]["weights_sha256"]
    assert rows["planted:one"]["loss_per_epoch"] == rows["planted:two"]["loss_per_epoch"]
    other = plant(study, options=options(name="three", seed=1))
    with Store(json_store(study), read_only=True) as store:
        third = {row["name"]: row for row in plantings(store)}["planted:three"]
    assert other.names == ["planted:three"]
    assert third["weights_sha256"] != rows["planted:one"]["weights_sha256"]


def json_store(config: Path) -> Path:
    return config.parent / "s.duckdb"


def test_the_record_says_what_was_planted_and_how(study):
    plant(study, options=options(format="qa", learning_rate=3e-4, batch_size=2, max_length=64))
    with Store(json_store(study), read_only=True) as store:
        [row] = plantings(store)
    assert row["name"] == "planted:p" and row["base_name"] == "base"
    assert row["base_model"] == str(study.parent / "tiny")
    assert len(row["planted_items"]) == 6 and row["format"] == "qa" and row["epochs"] == 2
    assert (row["learning_rate"], row["batch_size"], row["max_length"], row["seed"]) == (
        3e-4, 2, 64, 0)
    assert len(row["loss_per_epoch"]) == 2 and all(loss > 0 for loss in row["loss_per_epoch"])
    assert set(row["versions"]) == {"torch", "transformers", "tokenizers", "safetensors"}
    marker = json.loads((planted_dir("p") / PLANTED_MARKER).read_text())
    assert marker["weights_sha256"] == row["weights_sha256"] == plant_train.weights_sha256(
        planted_dir("p"))


def test_the_same_arguments_again_reuse_the_saved_model(study, monkeypatch):
    plant(study, options=options())
    weights = planted_dir("p") / "model.safetensors"
    written = weights.stat().st_mtime_ns

    def no_training(*args, **kwargs):
        raise AssertionError("a saved model was trained again")

    monkeypatch.setattr(plant_train, "train", no_training)
    monkeypatch.setattr("contam.harness.jobs.plant_run.train", no_training)
    again = plant(study, options=options())
    assert "reused the saved model" in again.lines[0]
    assert weights.stat().st_mtime_ns == written
    with Store(json_store(study), read_only=True) as store:
        assert len(store.query("SELECT * FROM plantings")) == 1  # not recorded twice
    with pytest.raises(UserError, match="made with other arguments; choose another --as"):
        plant(study, options=options(learning_rate=1e-3))


def test_several_doses_make_one_model_each_from_one_run(study):
    result = plant(study, options=options(name="d", epochs=(1, 3)))
    assert result.names == ["planted:d-e1", "planted:d-e3"]
    single = plant(study, options=options(name="single", epochs=(1,)))
    with Store(json_store(study), read_only=True) as store:
        rows = {row["name"]: row for row in plantings(store)}
    # a constant learning rate and per-epoch seeded order: dose 1 of a 3-epoch run is a 1-epoch run
    assert rows["planted:d-e1"]["weights_sha256"] == rows[single.names[0]]["weights_sha256"]
    assert rows["planted:d-e3"]["loss_per_epoch"][:1] == rows["planted:d-e1"]["loss_per_epoch"]
    assert resolve_local_model("planted:d-e3").directory == planted_dir("d-e3")


def test_the_share_is_seeded_and_stratified_by_subset():
    items = [ProbeItem(item_id=f"{s}{n}", title="", subset=s, question="", reference="")
             for s in ("x", "y") for n in range(10)]
    chosen = choose_planted(items, 0.3, seed=5)
    assert sum(i.subset == "x" for i in chosen) == sum(i.subset == "y" for i in chosen) == 3
    assert chosen == choose_planted(items, 0.3, seed=5)
    assert [i.item_id for i in chosen] != [i.item_id for i in choose_planted(items, 0.3, seed=6)]


def test_a_model_that_is_not_local_is_refused_in_one_line(study, tmp_path):
    config = tmp_path / "remote.toml"
    config.write_text(study.read_text() + '\n[[models]]\nname = "gpt"\nprovider = "openai"\n'
                      'model = "gpt-4o"\napi_key_env = "OPENAI_API_KEY"\n')
    done = subprocess.run([sys.executable, "-m", "contam.harness.cli", "plant", str(config), "--model",
                           "gpt", "--as", "x"], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "model 'gpt' is provider 'openai'; only provider = \"local\"" in done.stderr
    assert not planted_root().exists()


def test_an_interrupted_plant_leaves_nothing_usable(study, monkeypatch):
    real_step = plant_train._step
    steps = []

    def interrupted(*args):
        steps.append(1)
        if len(steps) > 2:  # in the second epoch (6 planted items, 4 a step: 2 steps an epoch)
            raise KeyboardInterrupt
        return real_step(*args)

    monkeypatch.setattr(plant_train, "_step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        plant(study, options=options())
    assert not planted_dir("p").exists()
    assert not list(planted_root().glob(".planting-*"))
    with pytest.raises(Fatal, match="is not in the model cache"):
        resolve_local_model("planted:p")
    with Store(json_store(study), read_only=True) as store:
        assert plantings(store) == []


_KILLED_WHILE_SAVING = """
import os, signal, sys
from contam.harness.jobs import plant_train
from contam.harness.jobs.plant import PlantOptions, plant

def killed(folder):
    os.kill(os.getpid(), signal.SIGKILL)  # the weights are written, the marker not yet

plant_train.weights_sha256 = killed
plant(sys.argv[1], options=PlantOptions(model="base", name="p", epochs=(1,)))
"""


def test_kill_9_while_saving_leaves_nothing_a_later_run_takes_for_finished(study):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _KILLED_WHILE_SAVING, str(study)], env=env,
                          cwd=ROOT, capture_output=True)
    assert done.returncode == -signal.SIGKILL
    [abandoned] = planted_root().glob(".planting-*")
    assert (abandoned / "model.safetensors").is_file()
    assert not planted_dir("p").exists()
    with pytest.raises(Fatal, match="is not in the model cache"):
        resolve_local_model("planted:p")
    result = plant(study, options=options(epochs=(1,)))
    assert "; training " in result.lines[0]  # not reused: the killed one never finished
    assert not abandoned.exists()  # its process is gone: swept
    assert (planted_dir("p") / PLANTED_MARKER).is_file()


@pytest.mark.parametrize(("flag", "value", "problem"), [
    ("name", "../x", "--as must be"), ("share", 1.0, "--share must be"),
    ("epochs", (0,), "--epochs must be"), ("format", "chat", "--format must be"),
    ("device", "tpu", "--device must be"),
])
def test_bad_arguments_are_one_line_each(study, flag, value, problem):
    with pytest.raises(UserError, match=problem):
        plant(study, options=options(**{flag: value}))
    assert not json_store(study).exists()


def test_the_display_shows_the_epoch_the_loss_and_the_time_left(study, monkeypatch, capsys):
    monkeypatch.setattr("contam.harness.display.batch._PLAIN_EVERY_S", 0.0)  # a line at every step
    plant(study, options=options())
    lines = capsys.readouterr().err.splitlines()
    assert any(re.fullmatch(r"plant p: epoch 2/2, loss \d+\.\d{3}: 3/4 \(\S+ steps/s, [\d,]+ s "
                            r"left\)", line) for line in lines), lines


def cli(*argv: str) -> int:
    from contam.harness.cli import main

    return main(["plant", *argv])


@pytest.mark.parametrize(("extra", "problem"), [
    (("--share", "1.5"), "--share must be a fraction between 0 and 1"),
    (("--epochs", "x"), "--epochs must be whole numbers, not 'x'"),
])
def test_a_refusal_names_the_command_once(study, capsys, extra, problem):
    assert cli(str(study), "--model", "base", "--as", "p", *extra) == 2
    assert capsys.readouterr().err == f"contam plant: {problem}\n"


def test_a_taken_name_is_refused_with_the_command_named_once(study, capsys):
    plant(study, options=options())
    capsys.readouterr()
    assert cli(str(study), "--model", "base", "--as", "p", "--epochs", "2", "--seed", "9") == 2
    *_, refusal = capsys.readouterr().err.splitlines()
    assert refusal.startswith("contam plant: planted:p already exists in ")
    assert refusal.count("contam plant") == 1
    assert refusal.endswith("made with other arguments; choose another --as")


def test_the_output_says_what_loads_and_labels_the_training_and_total_times(study, capsys):
    assert cli(str(study), "--model", "base", "--as", "p", "--epochs", "2", "--no-progress") == 0
    out, err = capsys.readouterr()
    assert "plant p: loading torch and transformers" in err.splitlines()
    assert any(line.startswith("plant p: loading base model base (") for line in err.splitlines())
    assert re.search(r"; training \d+ s; use provider", out), out
    assert re.fullmatch(r"done in (\d+) s in all \(training (\d+) s\)", out.splitlines()[-1])
    total, training = map(int, re.findall(r"\d+", out.splitlines()[-1]))
    assert total >= training
