"""Several replicas of one served model behind one lane: the config, where requests go, how a
failing replica cools down alone, what `attempts` and the display say."""

from __future__ import annotations


import anyio
import pytest

from contam.harness.config import ModelSpec, load_config
from contam.harness.display import RateMeter, plain_lines, render_table
from contam.harness.emulator.server import EmulatorSettings, run_emulator
from contam.harness.engine.counters import LaneStats, ReplicaStats
from contam.harness.engine.limits import LaneLimits
from contam.harness.engine.replicas import Replica, ReplicaSet
from contam.harness.errors import UserError
from contam.harness.store import Store
from contam.providers.base import Fatal, RateLimited, Transient
from tests.runkit import KEYS, model_entry, run_inprocess, write_config
from tests.test_progress import rendered


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


# -- the config --------------------------------------------------------------------------------

def config_with(tmp_path, base_url: str) -> ModelSpec:
    path = tmp_path / "run.toml"
    path.write_text(f'[[models]]\nprovider = "openai"\nmodel = "m"\nbase_url = {base_url}\n')
    return load_config(path).models[0]


def test_base_url_is_a_url_or_a_list_of_replicas(tmp_path):
    one = config_with(tmp_path, '"http://a:8000/v1"')
    assert one.replica_urls() == ("http://a:8000/v1",)
    two = config_with(tmp_path, '["http://a:8000/v1", "http://b:8000/v1"]')
    assert two.replica_urls() == ("http://a:8000/v1", "http://b:8000/v1")
    assert two.for_replica("http://b:8000/v1").base_url == "http://b:8000/v1"
    assert two.public_dict()["base_url"] == ("http://a:8000/v1", "http://b:8000/v1")
    assert ModelSpec(name="m", provider="openai", model="m").replica_urls() == (None,)


@pytest.mark.parametrize("value", ["[]", '["http://a", 3]', '[""]', "7"])
def test_a_base_url_that_is_neither_is_refused(tmp_path, value):
    with pytest.raises(UserError, match="base_url: must be a URL or a non-empty list of URLs"):
        config_with(tmp_path, value)


def test_a_batch_model_takes_one_base_url(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[[models]]\nprovider = "openai"\nmodel = "m"\nbatch = true\n'
                    'base_url = ["http://a/v1", "http://b/v1"]\n')
    with pytest.raises(UserError, match="'batch = true' sends to one batch API, not to replicas"):
        load_config(path)


# -- choosing and cooling down -----------------------------------------------------------------

def replica_set(n: int, backoff=(1.0, 8.0)) -> ReplicaSet:
    spec = ModelSpec(name="m", provider="openai", model="m")
    return ReplicaSet([Replica(f"http://r{i}", provider=None) for i in range(n)],
                      LaneLimits(spec), backoff)


def choose(replicas: ReplicaSet) -> Replica:
    return anyio.run(replicas.choose)


def test_requests_go_to_the_replica_with_the_fewest_in_flight():
    replicas = replica_set(3)
    a, b, c = replicas.replicas
    a.stats.in_flight, b.stats.in_flight, c.stats.in_flight = 2, 0, 1
    assert choose(replicas) is b
    b.stats.in_flight = 3
    assert choose(replicas) is c


def test_a_hinted_429_cools_down_that_replica_alone_for_the_hint():
    replicas = replica_set(2)
    a, b = replicas.replicas
    replicas.failed(a, RateLimited("429", http_status=429, retry_after_s=30))
    assert 29 < a.cooling_for() <= 30 and b.cooling_for() == 0
    assert replicas.limits.cooling_for() == 0  # the lane itself goes on
    assert choose(replicas) is b and a.stats.errors == 1


def test_an_unhinted_failure_backs_off_exponentially_and_a_reply_resets_it():
    replicas = replica_set(2, backoff=(1.0, 3.0))
    a, _ = replicas.replicas
    waits = []
    for _ in range(4):
        replicas.failed(a, Transient("500", http_status=500))
        waits.append(round(a.cooling_for()))
        a.open_at = 0.0
    assert waits == [1, 2, 3, 3]  # 1, 2, 4 capped at 3
    replicas.answered(a)
    replicas.failed(a, Transient("500", http_status=500))
    assert round(a.cooling_for()) == 1 and a.stats.ok == 1


def test_a_fatal_error_cools_nothing_down():
    replicas = replica_set(2)
    replicas.failed(replicas.replicas[0], Fatal("401", http_status=401))
    assert replicas.replicas[0].cooling_for() == 0


@pytest.fixture
def sleeps(monkeypatch):
    """Every wait ReplicaSet.choose asks for, in order (and really waited: the clock must move)."""
    asked: list[float] = []
    real_sleep = anyio.sleep

    async def recorded(seconds: float) -> None:
        asked.append(seconds)
        await real_sleep(seconds)

    monkeypatch.setattr("contam.harness.engine.replicas.anyio.sleep", recorded)
    return asked


def test_when_every_replicas_server_asked_for_a_wait_a_request_waits_for_the_first_to_reopen(sleeps):
    replicas = replica_set(2)
    a, b = replicas.replicas
    a.cool_down(0.3, hinted=True)
    b.cool_down(0.1, hinted=True)
    assert 0 < replicas.cooling_for() <= 0.1
    assert choose(replicas) is b
    # One wait, for b's hint (0.1 s), never for a's (0.3 s); a loaded machine may stretch the wait,
    # so what is asserted is what was asked for, not how long it took.
    assert len(sleeps) >= 1 and all(0 < wait <= 0.1 for wait in sleeps)


def test_when_every_replica_backs_off_on_its_own_a_request_goes_to_the_first_to_reopen_now(sleeps):
    """Two replicas answering 500 stacked every task behind their growing backoffs."""
    replicas = replica_set(3)
    a, b, c = replicas.replicas
    for replica, failures in ((a, 3), (b, 1), (c, 2)):
        for _ in range(failures):
            replicas.failed(replica, Transient("500", http_status=500))
    assert replicas.cooling_for() == 0  # the lane can send
    assert choose(replicas) is b  # its backoff (1 s) ends first
    assert sleeps == []  # ... and the request goes to it now, without waiting for that backoff
    a.cool_down(30, hinted=True)
    b.cool_down(30, hinted=True)
    assert choose(replicas) is c  # a server's hint is never overridden


def test_a_hint_beyond_max_hint_s_cools_nothing_down_the_lane_stops_instead():
    spec = ModelSpec(name="m", provider="openai", model="m")
    replicas = ReplicaSet([Replica("http://a", None), Replica("http://b", None)],
                          LaneLimits(spec), max_hint_s=600)
    replicas.failed(replicas.replicas[0], RateLimited("429", http_status=429, retry_after_s=3600))
    assert replicas.replicas[0].cooling_for() == 0 and replicas.replicas[0].stats.errors == 1


def test_one_replica_keeps_the_lane_gate():
    replicas = replica_set(1)
    replicas.failed(replicas.replicas[0], RateLimited("429", http_status=429, retry_after_s=5))
    assert 4 < replicas.limits.cooling_for() <= 5 and 4 < replicas.cooling_for() <= 5
    assert replicas.replicas[0].cooling_for() == 0


# -- end to end: a lane over two emulators, one of which fails every request --------------------

@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic", "ollama"])
def test_a_lane_over_two_replicas_answers_everything_through_the_healthy_one(tmp_path, provider):
    with run_emulator(EmulatorSettings(faults={"500": 1.0})) as broken, \
            run_emulator(EmulatorSettings(latency_ms=20)) as healthy:
        urls = [broken.base_url(provider), healthy.base_url(provider)]
        entry = model_entry(provider, broken, base_url=urls, max_attempts=5)
        config = write_config(tmp_path, [entry], items=12)
        result = run_inprocess(config, tmp_path / "s.duckdb")
    assert result.status == 0, result.err + result.out
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        assert store.count("latest_answers") == 12
        by_replica = dict(store.query(
            "SELECT replica, list(DISTINCT outcome || ':' || coalesce(http_status, 0)) "
            "FROM attempts GROUP BY replica"))
        ok_replicas = store.query("SELECT DISTINCT replica FROM attempts WHERE outcome = 'ok'")
    assert set(by_replica) == set(urls)  # attempts show both replicas
    assert by_replica[urls[0]] == ["transient:500"]
    assert by_replica[urls[1]] == ["ok:200"] and ok_replicas == [(urls[1],)]


def test_a_replica_whose_preflight_fails_is_left_out_and_the_others_answer(tmp_path):
    with run_emulator(EmulatorSettings()) as healthy:
        unreachable = "http://127.0.0.1:9"  # the discard port: nothing listens there
        entry = model_entry("ollama", healthy, base_url=[unreachable, healthy.base_url("ollama")])
        result = run_inprocess(write_config(tmp_path, [entry], items=6), tmp_path / "s.duckdb")
    assert result.status == 0, result.err + result.out
    assert f"ollama-m: replica {unreachable} left out:" in result.out + result.err
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        assert store.count("latest_answers") == 6
        assert store.query("SELECT DISTINCT replica FROM attempts") == [(healthy.base_url("ollama"),)]


@pytest.mark.timeout(120)  # without the fix: minutes, cells waiting on the replicas' backoffs
def test_two_replicas_that_always_fail_fail_every_cell_in_the_time_of_its_attempts(tmp_path):
    """60 items, max_attempts 3, both replicas answering 500: every cell fails with its reason,
    its three attempts back to back (retries wait nothing in tests, see conftest), none held back
    by a replica's own cool-down (1 s at the least)."""
    with run_emulator(EmulatorSettings(faults={"500": 1.0})) as one, \
            run_emulator(EmulatorSettings(faults={"500": 1.0})) as two:
        entry = model_entry("openai", one, base_url=[one.base_url("openai"), two.base_url("openai")],
                            max_attempts=3, concurrency=4)
        result = run_inprocess(write_config(tmp_path, [entry], items=60), tmp_path / "s.duckdb")
    assert result.status == 1
    assert "openai-m: 0/60 answered, 60 failed after all attempts" in result.out
    assert "openai-m: 60 failed — Transient: openai model 'openai-m': HTTP 500: " in result.out
    with Store(tmp_path / "s.duckdb", read_only=True) as store:
        spans = store.query("SELECT item_id, count(*), max(started_at) - min(started_at) "
                            "FROM attempts GROUP BY item_id")
    assert len(spans) == 60 and all(attempts == 3 for _, attempts, _ in spans)
    slowest = max(span.total_seconds() for _, _, span in spans)
    assert slowest < 1.0, f"a cell waited {slowest:.2f} s between its first and last attempt"


# -- the display -------------------------------------------------------------------------------

def replicated_lane() -> LaneStats:
    lane = LaneStats(label="llama-70b", total=100, cap=16, done=40, in_flight=5, sent=48)
    lane.replicas = [ReplicaStats(url="http://node1:8000/v1", in_flight=5, ok=40, errors=0),
                     ReplicaStats(url="http://node2:8000/v1", in_flight=0, ok=0, errors=8,
                                  cooling_for=lambda: 4.0)]
    return lane


def test_the_live_table_shows_each_replica_under_its_model():
    lines = rendered(render_table([replicated_lane()], RateMeter())).splitlines()
    model = next(i for i, line in enumerate(lines) if "llama-70b" in line)
    assert "node1:8000/v1  in flight 5  ok 40  errors 0" in lines[model + 1]
    assert "node2:8000/v1  in flight 0  ok 0  errors 8  cooling 4.0s" in lines[model + 2]


def test_plain_lines_show_each_replica_under_its_model():
    lines = plain_lines([replicated_lane()], RateMeter())
    assert lines[0].startswith("llama-70b: 40/100 answered")
    assert lines[1] == "llama-70b replica node1:8000/v1  in flight 5  ok 40  errors 0"
    assert lines[2] == "llama-70b replica node2:8000/v1  in flight 0  ok 0  errors 8  cooling 4.0s"
    assert lines[3].startswith("total: 40/100")
