"""`contam score --ray`: the BERTScore pass on a local Ray (2 CPUs, two actors) gives the numbers
of the single-process pass, and a Ray pass killed halfway resumes with only the rest.

Value for value within TOLERANCE, not bit for bit: bert-score batches a chunk's texts in an order
that follows Python's string hashing (``sorted(set(texts), key=word count)``), which differs from
process to process, so even two single-process passes differ in the last float32 bits (up to
~4e-7 seen). The shards, the baseline and everything else are the same."""

from __future__ import annotations

import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap

import orjson
import pytest
import ray

from contam.harness.errors import UserError
from contam.harness.jobs.score import score_store
from contam.harness.jobs.score_ray import RayOptions, RayShards
from contam.harness.store import Store, utc_now
from contam.metrics.bertscore import OFFLINE_ENCODER, resolve_encoder
from contam.metrics.bertscore_shards import make_scorer, reference_shards

ITEMS, MODELS, BLANKS = 50, 10, 10  # 500 pairs to score and 10 blank answers
SHARD = 100  # pairs per shard: 500 pairs make about 5 shards (a reference's pairs stay together)
CELLS = ITEMS * MODELS + BLANKS
TOLERANCE = 1e-6
WORDS = ("pokemon red blue gym badge brock misty surf flash cut strength tm hm city route cave "
         "trainer rival oak lab potion ball master great ultra").split()
LOCAL_RAY = RayOptions(cpus_per_actor=1)  # two one-core actors on the two CPUs


def fill(path) -> None:
    """ITEMS items x MODELS models to score (few distinct texts: the encoder's work is small), and
    BLANKS blank answers that get NULL without reaching it. The size is not what is tested: a
    few shards per pass are enough to kill a pass halfway."""
    rng = random.Random(7)
    text = lambda shortest, longest: " ".join(rng.choice(WORDS) for _ in range(rng.randint(shortest, longest)))  # noqa: E731
    references, answers = [text(2, 8) for _ in range(150)], [text(1, 8) for _ in range(80)]
    with Store(path, create=True) as store:
        store.append("items", [{"item_id": f"i{i:03d}", "title": "Red", "subset": "official",
                                "question": "q?", "reference": references[i % 150],
                                "added_at": utc_now()} for i in range(ITEMS)])
        store.append("answers", [{"item_id": f"i{i:03d}", "model": f"m{m}",
                                  "answer": rng.choice(answers), "created_at": utc_now()}
                                 for i in range(ITEMS) for m in range(MODELS)])
        store.append("answers", [{"item_id": f"i{i:03d}", "model": "blank", "answer": " ",
                                  "created_at": utc_now()} for i in range(BLANKS)])


def score(path, ray_options=None, idf=False):
    with Store(path) as store:
        [summary] = score_store(store, ["bertscore"], bertscore_model=OFFLINE_ENCODER,
                                ray=ray_options, shard_pairs=SHARD, idf=idf)
    return summary


def scores(path) -> dict:
    with Store(path, read_only=True) as store:
        return {(item, model): value for item, model, value in store.query(
            "SELECT item_id, model, value FROM scores WHERE metric = 'bertscore_f1'")}


def baseline_values(path) -> list[float]:
    with Store(path, read_only=True) as store:
        [(params,)] = store.query("SELECT DISTINCT params FROM scores")
    return orjson.loads(params)["baseline_values"]


def assert_same_numbers(got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys() and len(got) == CELLS
    for cell, value in expected.items():
        assert (got[cell] is None) == (value is None), cell
        assert value is None or abs(got[cell] - value) <= TOLERANCE, cell


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    path = tmp_path_factory.mktemp("ray") / "filled.duckdb"
    fill(path)
    return path


@pytest.fixture(scope="module")
def single_process(filled):
    """The single-process pass over the same store: the numbers to match."""
    path = filled.with_name("single.duckdb")
    shutil.copy(filled, path)
    summary = score(path)
    assert (summary.scored, summary.null) == (CELLS, BLANKS)
    return scores(path), baseline_values(path)


@pytest.fixture(scope="module")
def ray_address():
    context = ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR,
                       object_store_memory=128 * 1024 * 1024)
    yield context.address_info["address"]
    ray.shutdown()


def test_shards_keep_a_references_pairs_together():
    pairs = [("a", "r2"), ("b", "r1"), ("c", "r2"), ("d", "r3"), ("e", "r1"), ("f", "r2")]
    assert reference_shards(pairs, 2) == [[1, 4], [0, 2, 5], [3]]
    assert reference_shards(pairs, 100) == [[1, 4, 0, 2, 5, 3]]
    assert reference_shards([], 2) == []


@pytest.mark.slow
def test_the_ray_pass_gives_the_single_process_numbers(filled, single_process, ray_address, tmp_path):
    path = tmp_path / "ray.duckdb"
    shutil.copy(filled, path)
    summary = score(path, LOCAL_RAY)
    assert (summary.scored, summary.null, summary.skipped) == (CELLS, BLANKS, 0)
    expected, expected_baseline = single_process
    assert_same_numbers(scores(path), expected)
    assert baseline_values(path) == pytest.approx(expected_baseline, abs=TOLERANCE)


@pytest.mark.slow
def test_the_actors_weigh_by_the_drivers_idf_corpus(filled, ray_address, tmp_path):
    here, there = tmp_path / "here.duckdb", tmp_path / "there.duckdb"
    shutil.copy(filled, here)
    shutil.copy(filled, there)
    local, distributed = score(here, idf=True), score(there, LOCAL_RAY, idf=True)
    assert distributed.params == local.params and local.params["idf"] is True
    assert_same_numbers(scores(there), scores(here))


KILLED_AFTER_TWO_SHARDS = textwrap.dedent("""
    import os, signal, sys
    import contam.harness.jobs.score as score
    from contam.harness.jobs.score_ray import RayOptions
    from contam.harness.store import Store

    appended, append = [], score._append
    def append_then_die(store, rows):  # the NULL rows, then two shards: kill -9
        append(store, rows)
        appended.append(len(rows))
        if len(appended) == 3:
            os.kill(os.getpid(), signal.SIGKILL)
    score._append = append_then_die
    with Store(sys.argv[1]) as store:
        score.score_store(store, ["bertscore"], bertscore_model=sys.argv[3],
                          shard_pairs=int(sys.argv[4]),
                          ray=RayOptions(address=sys.argv[2], cpus_per_actor=1))
""")


@pytest.mark.slow
def test_a_ray_pass_killed_halfway_resumes_with_only_the_rest(filled, single_process, ray_address,
                                                              tmp_path):
    path = tmp_path / "killed.duckdb"
    shutil.copy(filled, path)
    killed = subprocess.run([sys.executable, "-c", KILLED_AFTER_TWO_SHARDS, str(path), ray_address,
                             OFFLINE_ENCODER, str(SHARD)], capture_output=True, text=True, timeout=600,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    written = len(scores(path))
    assert BLANKS + 2 * SHARD <= written < CELLS  # the NULLs and two shards survived the kill
    summary = score(path, LOCAL_RAY)
    assert (summary.skipped, summary.scored) == (written, CELLS - written)
    with Store(path, read_only=True) as store:
        assert store.count("scores") == CELLS  # nothing scored twice
    assert_same_numbers(scores(path), single_process[0])


def test_the_precision_follows_the_actors_not_this_machine():
    """A CPU head node driving GPU workers: tf32 by default, accepted; CPU workers refuse it."""
    choice = resolve_encoder(OFFLINE_ENCODER)
    assert make_scorer(choice, None, remote="cuda").precision == "tf32"  # no GPU here
    assert make_scorer(choice, None, "tf32", remote="cuda").params(None)["precision"] == "tf32"
    assert make_scorer(choice, None, remote="cpu").precision == "fp32"
    with pytest.raises(UserError, match="tf32 is a CUDA mode"):
        make_scorer(choice, None, "tf32", remote="cpu")


def test_the_device_kind_is_the_clusters(ray_address, monkeypatch):
    shards = RayShards(LOCAL_RAY, resolve_encoder(OFFLINE_ENCODER), None)
    assert shards.device_kind() == "cpu"  # the local Ray of this module: two CPUs
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 64.0, "GPU": 4.0})
    assert shards.device_kind() == "cuda"


def test_tf32_on_a_cluster_without_gpus_is_refused_before_anything_is_written(filled,
                                                                              ray_address,
                                                                              tmp_path):
    path = tmp_path / "tf32.duckdb"
    shutil.copy(filled, path)
    with Store(path) as store, pytest.raises(UserError, match="tf32 is a CUDA mode"):
        score_store(store, ["bertscore"], bertscore_model=OFFLINE_ENCODER, ray=LOCAL_RAY,
                    precision="tf32")
    assert scores(path) == {} and ray.is_initialized()  # the caller's Ray is left as it was


@pytest.mark.slow
def test_contam_score_ray_without_an_address_starts_a_ray_of_its_own(tmp_path):
    path = tmp_path / "small.duckdb"
    with Store(path, create=True) as store:
        store.append("items", [{"item_id": f"i{i}", "reference": f"{WORDS[i]} {WORDS[i + 1]}",
                                "added_at": utc_now()} for i in range(6)])
        store.append("answers", [{"item_id": f"i{i}", "model": "m", "answer": WORDS[i + 2],
                                  "created_at": utc_now()} for i in range(6)])
    done = subprocess.run([sys.executable, "-m", "contam.harness.cli", "score", "--store", str(path),
                           "--metric", "bertscore", "--ray", "--no-rescale", "--bertscore-model",
                           OFFLINE_ENCODER, "--no-progress"], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("bertscore_f1: 6 scored (0 NULL)")
    assert len(scores(path)) == 6 and None not in scores(path).values()


def test_without_ray_the_flag_says_how_to_get_it(filled, contam, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    status, out, err = contam("score", "--store", filled, "--metric", "bertscore", "--ray",
                              "--bertscore-model", OFFLINE_ENCODER)
    assert status == 2 and err.strip() == ("contam score: --ray needs Ray, an optional extra: "
                                           "pip install 'contam[ray]'")


def test_device_and_ray_are_refused_together(filled, contam):
    status, out, err = contam("score", "--store", filled, "--ray", "auto", "--device", "cpu")
    assert status == 2 and "--device and --ray contradict each other" in err
