"""The reply journal: written before the batch, replayed once by the next writer, kill -9 safe."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import orjson

from contam.harness.store.journal import Journal, journal_path
from contam.harness.store import Store, utc_now
from contam.harness.engine.writer import BatchWriter

ROOT = Path(__file__).resolve().parents[1]


def reply(n: int, run_id: str = "r1") -> dict:
    now = utc_now()
    return {"answers": [{"run_id": run_id, "item_id": f"i{n}", "model": "m", "answer_raw": f"a{n}",
                         "answer": f"a{n}", "created_at": now}],
            "attempts": [{"run_id": run_id, "item_id": f"i{n}", "model": "m", "attempt": 1,
                          "started_at": now, "outcome": "ok", "http_status": 200}]}


def failed(n: int) -> dict:
    return {"attempts": [{"run_id": "r1", "item_id": f"i{n}", "model": "m", "attempt": 1,
                          "outcome": "transient", "error": "HTTP 500"}]}


def answers(path: Path) -> list[tuple]:
    with Store(path, read_only=True) as store:
        return store.query("SELECT item_id, answer_raw, created_at IS NOT NULL FROM answers "
                           "ORDER BY item_id")


def test_each_reply_is_journaled_before_its_commit_and_the_journal_goes_after(store_path):
    async def main() -> list[bytes]:
        with Store(store_path, create=True) as store:
            async with BatchWriter(store, max_delay_s=60, min_age_s=60) as writer:
                for n in range(3):
                    await writer.write(reply(n))
                await writer.write(failed(9))
                lines = journal_path(store_path).read_bytes().splitlines()
                assert store.count("answers") == 0  # nothing committed yet
            return lines

    lines = anyio.run(main)
    assert [orjson.loads(line)["answers"][0]["item_id"] for line in lines] == ["i0", "i1", "i2"]
    assert not journal_path(store_path).exists()  # all committed: nothing left to replay
    assert len(answers(store_path)) == 3


def test_each_commit_empties_the_journal(store_path):
    async def main() -> list[int]:
        sizes = []
        with Store(store_path, create=True) as store:
            async with BatchWriter(store, max_writes=2, min_age_s=0, max_delay_s=60) as writer:
                for n in range(3):
                    await writer.write(reply(n))
                    with anyio.fail_after(5):  # the drain task commits each pair
                        while writer.batches_committed < (n + 1) // 2:
                            await anyio.sleep(0.01)
                    sizes.append(len(journal_path(store_path).read_bytes().splitlines()))
        return sizes

    assert anyio.run(main) == [1, 0, 1]


def test_the_next_writer_replays_what_the_store_lacks_once(store_path):
    # i0 reached the store before the kill; i1, i2 did not
    with Store(store_path, create=True) as store:
        for table, rows in reply(0).items():
            store.append(table, rows)
    journal = Journal(journal_path(store_path))
    for n in range(3):
        journal.append(reply(n))
    journal.close(committed=False)
    with journal_path(store_path).open("ab") as handle:  # a line the kill cut short
        handle.write(b'{"answers": [{"run_id": "r1", "item_id": "i3"')
    with Store(store_path) as store:
        assert store.replayed == 2
    assert [row[:2] for row in answers(store_path)] == [("i0", "a0"), ("i1", "a1"), ("i2", "a2")]
    assert all(row[2] for row in answers(store_path))  # timestamps came back as timestamps
    assert not journal_path(store_path).exists()
    with Store(store_path) as store:
        assert store.replayed == 0 and store.count("answers") == 3


def test_an_empty_journal_left_by_a_kill_after_a_commit_is_removed(store_path):
    Store(store_path, create=True).close()
    journal_path(store_path).write_bytes(b"")
    journal_path(store_path).chmod(0o600)  # as contam makes it: another mode is refused
    with Store(store_path) as store:
        assert store.replayed == 0 and store.count("answers") == 0
    assert not journal_path(store_path).exists()


def test_a_reader_leaves_the_journal_for_the_next_writer(store_path):
    Store(store_path, create=True).close()
    journal = Journal(journal_path(store_path))
    journal.append(reply(0))
    journal.close(committed=False)
    with Store(store_path, read_only=True) as store:
        assert store.count("answers") == 0
    assert journal_path(store_path).exists()
    with Store(store_path) as store:
        assert store.replayed == 1


CHILD = textwrap.dedent("""
    import sys, time, anyio
    from contam.harness.store import Store
    from contam.harness.engine.writer import BatchWriter
    from tests.test_journal import reply

    async def main():
        with Store(sys.argv[1], create=True) as store:
            async with BatchWriter(store, max_delay_s=600, min_age_s=600) as writer:
                for n in range(5):
                    await writer.write(reply(n))
                print("written", flush=True)
                await anyio.sleep(600)

    anyio.run(main)
""")


def test_replies_survive_a_kill_9_before_their_commit(store_path):
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(store_path)], cwd=ROOT,
                             stdout=subprocess.PIPE, text=True, env={"PYTHONPATH": str(ROOT)})
    try:
        assert child.stdout.readline().strip() == "written"
    finally:
        child.kill()  # SIGKILL: no cleanup, no commit
        child.wait()
    assert answers(store_path) == []  # a reader sees only what was committed: nothing
    with Store(store_path) as store:
        assert store.replayed == 5
    assert [row[0] for row in answers(store_path)] == [f"i{n}" for n in range(5)]


def test_contam_run_recovers_a_killed_runs_replies_and_asks_only_the_rest(tmp_path, contam,
                                                                         monkeypatch):
    from contam.harness.emulator.server import run_emulator
    from tests.runkit import KEYS, model_entry, write_config

    monkeypatch.setenv("OPENAI_API_KEY", KEYS["OPENAI_API_KEY"])
    store = tmp_path / "s.duckdb"
    killed = reply(0, run_id="killed-run")
    for row in (*killed["answers"], *killed["attempts"]):
        row.update(item_id="q0000", model="openai-m")
    with run_emulator() as emu:
        config = write_config(tmp_path, [model_entry("openai", emu)], items=3)
        contam("import", "items", tmp_path / "items.csv", "--store", store)
        journal = Journal(journal_path(store))
        journal.append(killed)
        journal.close(committed=False)
        status, out, err = contam("run", config, "--store", store, "--no-progress")
        asked = [request.body["messages"][-1]["content"] for request in emu.requests
                 if request.path == "/v1/chat/completions"]
    assert status == 0, err
    assert f"{store}: 1 reply a killed run had received, recovered from its journal" in out
    assert len(asked) == 2 and not any("Question 0?" in text for text in asked)
    with Store(store, read_only=True) as opened:
        assert opened.query("SELECT run_id, answer_raw FROM answers WHERE item_id = 'q0000'") == \
            [("killed-run", "a0")]
