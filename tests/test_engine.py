"""The generic engine and the single writer, with fake providers (no sockets): what is retried,
what stops a lane, the accept hook, lazy task streams, draining, and batched commits."""

from __future__ import annotations

import gc

import anyio
import pytest

from contam.harness.config import ModelSpec
from contam.harness.engine.lanes import Engine, Lane, Task, stop_reason
from contam.harness.engine.writer import BatchWriter
from contam.harness.store import Store
from contam.providers.base import (
    Fatal, MissingKey, Provider, QuotaExhausted, RateLimited, Reply, Request, ServedModelMismatch, Transient,
)


class FakeProvider(Provider):
    """Answers ``answer <user>``; ``script`` maps a call number (1-based) to an exception."""

    def __init__(self, spec: ModelSpec, script=None, served=None, gate: anyio.Event | None = None):
        self.spec, self.script, self.served, self.gate = spec, script or {}, served, gate
        self.calls: list[str] = []

    async def generate(self, request: Request) -> Reply:
        self.calls.append(request.user)
        number = len(self.calls)
        if self.gate is not None:
            await self.gate.wait()
        await anyio.sleep(0)
        outcome = self.script.get(number)
        if outcome is not None:
            raise outcome
        return Reply(text=f"answer {request.user}", served_model=self.served or self.spec.model)


def spec(name="fake", **overrides) -> ModelSpec:
    return ModelSpec(**{"name": name, "provider": "openai", "model": "fake-1", "concurrency": 2,
                        "max_attempts": 3, **overrides})


def tasks(label: str, n: int, pulled: list | None = None):
    for i in range(n):
        if pulled is not None:
            pulled.append(i)
        yield Task(item_id=f"q{i}", model=label, request=Request(system="s", user=f"u{i}"))


def keep_answer(task: Task, reply: Reply, latency_s: float):
    return {"answers": [{"run_id": "r1", "item_id": task.item_id, "model": task.model,
                         "answer_raw": reply.text, "latency_s": latency_s}]}


def run(store: Store, lanes, accept=keep_answer, notes=None):
    engine = Engine(lanes, run_id="r1", accept=accept)

    async def main():
        async with BatchWriter(store) as writer:
            await engine.run(writer, notify=(notes if notes is not None else []).append)

    anyio.run(main)
    return engine


def attempts(store, model="fake"):
    return store.query("SELECT item_id, attempt, outcome, error FROM attempts "
                       f"WHERE model = '{model}' ORDER BY seq")


def test_answers_and_ok_attempts_are_written_for_every_task(store):
    lane_spec = spec()
    engine = run(store, [Lane(spec=lane_spec, tasks=tasks("fake", 7), total=7,
                              provider=FakeProvider(lane_spec))])
    [stats] = engine.stats
    assert (stats.done, stats.failed, stats.stopped, stats.in_flight) == (7, 0, None, 0)
    assert store.count("answers") == 7
    assert {row[2] for row in attempts(store)} == {"ok"} and len(attempts(store)) == 7


def test_only_retryable_errors_are_retried_up_to_max_attempts(store):
    lane_spec = spec(concurrency=1, max_attempts=3)
    always = {n: Transient("boom", http_status=503) for n in range(1, 4)}
    provider = FakeProvider(lane_spec, script=always)
    engine = run(store, [Lane(spec=lane_spec, tasks=tasks("fake", 2), total=2, provider=provider)])
    assert provider.calls == ["u0", "u0", "u0", "u1"]  # three attempts, then the next task
    assert [row[:3] for row in attempts(store)] == [("q0", 1, "transient"), ("q0", 2, "transient"),
                                                   ("q0", 3, "transient"), ("q1", 1, "ok")]
    assert (engine.stats[0].failed, engine.stats[0].retries, engine.stats[0].done) == (1, 2, 1)


@pytest.mark.parametrize("error, reason", [
    (Fatal("HTTP 400: bad request", http_status=400), "fatal"),
    (Fatal("HTTP 401: invalid key", http_status=401), "auth"),
    (QuotaExhausted("per-day quota"), "quota"),
    (ServedModelMismatch("asked for a, got b"), "substitution"),
])
def test_a_non_retryable_error_stops_its_lane_and_not_the_others(store, error, reason):
    bad_spec, good_spec = spec("bad", concurrency=1), spec("good")
    bad = FakeProvider(bad_spec, script={2: error})
    pulled: list[int] = []
    notes: list[str] = []
    engine = run(store, [Lane(spec=bad_spec, tasks=tasks("bad", 50, pulled), total=50, provider=bad),
                         Lane(spec=good_spec, tasks=tasks("good", 20), total=20,
                              provider=FakeProvider(good_spec))], notes=notes)
    bad_stats, good_stats = engine.stats
    assert bad.calls == ["u0", "u1"]  # no retry, nothing after the stop
    assert (bad_stats.stopped, bad_stats.done) == (reason, 1)
    assert len(pulled) <= 3  # the task stream is pulled lazily, not drained
    assert good_stats.stopped is None and good_stats.done == 20
    assert any("bad: STOPPED" in note for note in notes)


def test_served_model_is_checked_before_anything_is_written(store):
    lane_spec = spec(concurrency=1)
    engine = run(store, [Lane(spec=lane_spec, tasks=tasks("fake", 5), total=5,
                              provider=FakeProvider(lane_spec, served="fake-2"))])
    assert engine.stats[0].stopped == "substitution"
    assert "'fake-1'" in engine.stats[0].stop_message and "'fake-2'" in engine.stats[0].stop_message
    assert store.count("answers") == 0
    assert [row[2] for row in attempts(store)] == ["fatal"]


def test_a_dated_served_model_is_accepted(store):
    lane_spec = spec()
    engine = run(store, [Lane(spec=lane_spec, tasks=tasks("fake", 3), total=3,
                              provider=FakeProvider(lane_spec, served="fake-1-2026-01-01"))])
    assert engine.stats[0].done == 3


def test_accept_may_raise_a_retryable_error_that_is_recorded_and_asked_again(store):
    lane_spec = spec(concurrency=1)
    provider = FakeProvider(lane_spec)
    seen: list[str] = []

    def picky(task, reply, latency_s):
        seen.append(task.item_id)
        if seen.count(task.item_id) == 1:  # the judge's malformed label, the first time
            raise Transient(f"malformed label {reply.text!r}")
        return keep_answer(task, reply, latency_s)

    engine = run(store, [Lane(spec=lane_spec, tasks=tasks("fake", 2), total=2, provider=provider)],
                 accept=picky)
    assert provider.calls == ["u0", "u0", "u1", "u1"]
    assert [row[:3] for row in attempts(store)] == [("q0", 1, "transient"), ("q0", 2, "ok"),
                                                   ("q1", 1, "transient"), ("q1", 2, "ok")]
    assert "malformed label 'answer u0'" in attempts(store)[0][3]
    assert engine.stats[0].retries == 2 and store.count("answers") == 2


def test_a_hinted_rate_limit_is_waited_out_before_the_lane_sends_again(store):
    lane_spec = spec(concurrency=2)
    provider = FakeProvider(lane_spec, script={1: RateLimited("429", http_status=429, retry_after_s=0.3)})
    times: list[float] = []
    original = provider.generate

    async def timed(request):
        times.append(anyio.current_time())
        return await original(request)

    provider.generate = timed
    engine = run(store, [Lane(spec=lane_spec, tasks=tasks("fake", 4), total=4, provider=provider)])
    assert engine.stats[0].rate_limited == 1 and engine.stats[0].done == 4
    # The first call was the 429; every later call waited for the hint (the second one may have
    # started before the 429 came back, alongside the first).
    later = [t for t in times[1:] if t - times[0] > 0.01]
    assert later and min(later) - times[0] >= 0.3
    assert store.query("SELECT retry_after_s FROM attempts WHERE outcome = 'rate_limited'") == [(0.3,)]


def test_an_unexpected_exception_stops_the_lane_as_an_internal_error(store):
    lane_spec = spec(concurrency=1)
    engine = run(store, [Lane(spec=lane_spec, tasks=tasks("fake", 3), total=3,
                              provider=FakeProvider(lane_spec, script={1: KeyError("choices")}))])
    assert engine.stats[0].stopped == "internal error"
    assert "KeyError" in engine.stats[0].stop_message
    assert attempts(store)[0][2] == "fatal"


def test_a_provider_that_cannot_be_built_stops_its_lane(store):
    def factory(lane_spec, client):
        raise MissingKey("environment variable NOPE_KEY is not set")

    engine = Engine([Lane(spec=spec(), tasks=tasks("fake", 3), total=3)], run_id="r1",
                    accept=keep_answer, provider_factory=factory)

    async def main():
        async with BatchWriter(store) as writer:
            await engine.run(writer, notify=lambda message: None)

    anyio.run(main)
    assert engine.stats[0].stopped == "missing key" and "NOPE_KEY" in engine.stats[0].stop_message
    assert store.count("attempts") == 0


def test_drain_lets_in_flight_requests_finish_and_sends_nothing_new(store):
    lane_spec = spec(concurrency=3)
    gate = anyio.Event()
    provider = FakeProvider(lane_spec, gate=gate)
    engine = Engine([Lane(spec=lane_spec, tasks=tasks("fake", 20), total=20, provider=provider)],
                    run_id="r1", accept=keep_answer)

    async def interrupt():
        while len(provider.calls) < 3:
            await anyio.sleep(0.001)
        engine.drain()
        gate.set()

    async def main():
        async with BatchWriter(store) as writer, anyio.create_task_group() as group:
            group.start_soon(interrupt)
            await engine.run(writer, notify=lambda message: None)

    anyio.run(main)
    assert len(provider.calls) == 3 and store.count("answers") == 3
    assert engine.stats[0].interrupted and engine.stats[0].state == "interrupted"


class Hanging(Provider):
    """A provider whose requests never come back."""

    def __init__(self, spec: ModelSpec):
        self.spec, self.calls = spec, 0

    async def generate(self, request: Request) -> Reply:
        self.calls += 1
        await anyio.sleep(3600)
        raise AssertionError("unreachable")


def test_a_request_past_its_deadline_is_a_timeout_attempt_and_retried(store, monkeypatch):
    monkeypatch.setattr("contam.harness.engine.attempts.DEADLINE_MARGIN_S", 0.0)
    lane_spec = spec(concurrency=1, max_attempts=2, timeout_s=0.05)
    provider = Hanging(lane_spec)
    engine = run(store, [Lane(spec=lane_spec, tasks=tasks("fake", 1), total=1, provider=provider)])
    assert provider.calls == 2 and engine.stats[0].failed == 1
    assert [row[1:3] for row in attempts(store)] == [(1, "timeout"), (2, "timeout")]
    assert "no reply within 0.05 s" in attempts(store)[0][3]


def test_abandon_gives_up_in_flight_requests_without_recording_them(store):
    lane_spec = spec(concurrency=3)
    provider = Hanging(lane_spec)
    engine = Engine([Lane(spec=lane_spec, tasks=tasks("fake", 10), total=10, provider=provider)],
                    run_id="r1", accept=keep_answer)

    async def interrupt():
        while provider.calls < 3:
            await anyio.sleep(0.001)
        engine.drain()  # the first Ctrl-C: the three in flight go on
        await anyio.sleep(0.05)
        engine.abandon()  # the second: give them up

    async def main():
        async with BatchWriter(store) as writer, anyio.create_task_group() as group:
            group.start_soon(interrupt)
            with anyio.fail_after(10):
                await engine.run(writer, notify=lambda message: None)

    anyio.run(main)
    assert provider.calls == 3 and store.count("attempts") == 0
    assert engine.stats[0].interrupted and engine.stats[0].in_flight == 0


def test_the_engine_restores_the_garbage_collector(store):
    thresholds = gc.get_threshold()
    seen = []

    def note_collector(task, reply, latency_s):
        seen.append((gc.get_threshold()[0], gc.get_freeze_count() > 0))
        return keep_answer(task, reply, latency_s)

    lane_spec = spec()
    run(store, [Lane(spec=lane_spec, tasks=tasks("fake", 2), total=2, provider=FakeProvider(lane_spec))],
        accept=note_collector)
    assert seen == [(10_000, True)] * 2  # tuned while the lanes run
    assert gc.get_threshold() == thresholds and gc.get_freeze_count() == 0


def test_stop_reason_names():
    assert stop_reason(Transient("connection refused")) == "unreachable"
    assert stop_reason(Fatal("forbidden", http_status=403)) == "auth"
    assert stop_reason(RuntimeError("bug")) == "internal error"


# -- the writer -------------------------------------------------------------------------------

def committed_rows(reader) -> int:
    return reader.execute("SELECT count(*) FROM attempts").fetchall()[0][0]


def test_writer_commits_once_max_writes_are_waiting_and_everything_on_exit(store):
    reader = store.con.cursor()

    async def main():
        async with BatchWriter(store, max_writes=50, max_delay_s=60) as writer:
            for i in range(49):
                await writer.write({"attempts": [{"run_id": "w", "item_id": f"q{i}", "attempt": 1}]})
            await anyio.sleep(0.2)
            waiting_49 = committed_rows(reader)
            await writer.write({"attempts": [{"run_id": "w", "item_id": "q49", "attempt": 1}]})
            with anyio.fail_after(5):
                while committed_rows(reader) < 50:  # the 50th row starts a commit, not the clock
                    await anyio.sleep(0.01)
            for i in range(50, 70):
                await writer.write({"attempts": [{"run_id": "w", "item_id": f"q{i}", "attempt": 1}]})
        return waiting_49, writer

    waiting_49, writer = anyio.run(main)
    assert waiting_49 == 0
    assert store.count("attempts") == 70 == writer.rows_committed  # the last 20 on exit
    assert writer.batches_committed == 2


def test_writer_commits_a_lone_row_after_max_delay(store):
    reader = store.con.cursor()

    async def main():
        async with BatchWriter(store, max_writes=50, max_delay_s=0.05) as writer:
            await writer.write({"attempts": [{"run_id": "w", "item_id": "q0"}]})
            with anyio.fail_after(5):
                while committed_rows(reader) == 0:
                    await anyio.sleep(0.01)
            return writer.batches_committed

    assert anyio.run(main) == 1  # committed while the writer was still open


def test_a_full_batch_gathers_until_its_first_write_is_min_age_old(store):
    """A burst is committed once, not in slices of max_writes: the batch gathers until its first
    write is min_age_s old, then takes everything written meanwhile."""
    reader = store.con.cursor()

    async def write(writer, numbers):
        for i in numbers:
            await writer.write({"attempts": [{"run_id": "w", "item_id": f"q{i}", "attempt": 1}]})

    async def main():
        async with BatchWriter(store, max_writes=10, max_delay_s=60, min_age_s=0.5) as writer:
            await write(writer, range(10))
            await anyio.sleep(0.1)
            full_but_young = committed_rows(reader)  # 10 waiting, the first only 0.1 s old
            await write(writer, range(10, 25))
            with anyio.fail_after(5):
                while committed_rows(reader) == 0:  # goes at 0.5 s, well before max_delay_s
                    await anyio.sleep(0.01)
            return full_but_young, committed_rows(reader), writer.batches_committed

    young, first_commit, batches = anyio.run(main)
    assert young == 0
    assert first_commit == 25 and batches == 1  # the whole burst in one commit


def test_a_full_batch_whose_first_write_is_old_enough_goes_at_once(store):
    reader = store.con.cursor()

    async def main():
        async with BatchWriter(store, max_writes=10, max_delay_s=60, min_age_s=0.2) as writer:
            await writer.write({"attempts": [{"run_id": "w", "item_id": "q0"}]})
            await anyio.sleep(0.3)  # older than min_age_s, but only 1 of max_writes waiting
            alone = committed_rows(reader)
            for i in range(1, 10):
                await writer.write({"attempts": [{"run_id": "w", "item_id": f"q{i}"}]})
            with anyio.fail_after(5):
                while committed_rows(reader) < 10:  # the 10th write starts the commit
                    await anyio.sleep(0.01)
            return alone

    assert anyio.run(main) == 0


def test_a_write_is_no_cancellation_point(store):
    """A reply that came back is queued even while its lane is being cancelled."""
    async def main():
        async with BatchWriter(store) as writer:
            with anyio.CancelScope() as scope:
                scope.cancel()
                await writer.write({"attempts": [{"run_id": "w", "item_id": "q0"}]})
                await writer.write({"attempts": [{"run_id": "w", "item_id": "q1"}]})
            return scope.cancelled_caught

    assert anyio.run(main) is False  # neither write raised the cancellation
    assert store.count("attempts") == 2


def test_rows_that_are_null_everywhere_are_still_rows(store):
    async def main():
        async with BatchWriter(store) as writer:
            await writer.write({"attempts": [{"run_id": None, "item_id": None}]})

    anyio.run(main)
    assert store.count("attempts") == 1


def test_rows_of_one_write_share_a_transaction(store):
    async def main():
        async with BatchWriter(store, max_writes=1) as writer:
            await writer.write({"answers": [{"item_id": "q0", "model": "m"}],
                                "attempts": [{"item_id": "q0", "model": "m", "outcome": "ok"}]})
        return writer.batches_committed

    assert anyio.run(main) == 1
    assert store.count("answers") == store.count("attempts") == 1


def test_writer_refuses_a_bad_row_loudly(store):
    async def main():
        async with BatchWriter(store) as writer:
            await writer.write({"answers": [{"item_id": "q0", "model": "m", "no_such_column": 1}]})

    with pytest.raises(Exception) as caught:
        anyio.run(main)
    assert "no_such_column" in str(caught.value) or "no_such_column" in repr(caught.value.exceptions)


def test_a_refused_lane_is_reported_once_before_any_lane_sends(store):
    events: list[str] = []

    class Logged(FakeProvider):
        async def generate(self, request: Request) -> Reply:
            events.append(f"send {self.spec.name}")
            return await super().generate(request)

    keyless, fine = spec("keyless"), spec("fine")
    lanes = [Lane(spec=fine, tasks=tasks("fine", 3), total=3, provider=Logged(fine)),
             Lane(spec=keyless, tasks=tasks("keyless", 3), total=3, provider=Logged(keyless),
                  refused=MissingKey("model 'keyless': environment variable K is not set"))]
    engine = run(store, lanes, notes=events)
    assert events[0] == "keyless: STOPPED (missing key): model 'keyless': environment variable K is not set"
    assert sum("keyless" in e for e in events) == 1  # reported once, never sent
    assert events.count("send fine") == 3
    assert engine.stats[1].stopped == "missing key" and engine.stats[1].done == 0


def test_failed_tasks_count_their_last_error_by_cause(store):
    import httpx

    def unreachable() -> Transient:
        try:
            raise httpx.ConnectError("All connection attempts failed")
        except httpx.ConnectError as exc:
            try:
                raise Transient("openai model 'fake': connection failed") from exc
            except Transient as wrapped:
                return wrapped

    script = {n: unreachable() for n in range(1, 7)}
    lane = Lane(spec=spec(max_attempts=2, concurrency=1), tasks=tasks("fake", 3), total=3,
                provider=FakeProvider(spec(), script=script))
    engine = run(store, [lane])
    assert engine.stats[0].failed == 3
    assert engine.stats[0].top_failures() == [("ConnectError: All connection attempts failed", 3)]
