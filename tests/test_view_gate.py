"""`contam view` keeps one connection to the store while nobody else wants it, and lets go the
moment someone asks (ARCHITECTURE.md, "A view that keeps the store open").
Counted, never timed: how many times the store is opened, and who gets it."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import time

import pytest

from contam.harness.store import Store
from contam.harness.store.wanted import ask_for, last_asked, wanted_path
from tests.holderkit import held_elsewhere
from tests.viewkit import MODELS, build_view_store, view_client


@pytest.fixture
def path(tmp_path):
    return build_view_store(tmp_path / "view.duckdb", items=6)


def _gate(client):
    """The app's StoreGate: TestClient -> response headers -> token guard -> Starlette."""
    return client.app.app.app.state.view.gate


@pytest.fixture
def opens(monkeypatch):
    """Every DuckDB connection any Store makes, counted."""
    made = []
    real = Store._connect

    def counting(self, wait_s):
        made.append((self.path, self.read_only))
        return real(self, wait_s)

    monkeypatch.setattr(Store, "_connect", counting)
    return made


def test_the_view_answers_every_kind_of_request_without_opening_the_store_again(path, opens,
                                                                              monkeypatch):
    from contam.harness.view import gate as gate_module

    monkeypatch.setattr(gate_module, "WRITE_HOLD_S", 600.0)  # a rater labelling steadily
    client = view_client(path)
    cell = re.search(r'data-cell="([0-9a-f]+)"', client.get("/label?rater=alice").text)[1]
    before = len(opens)
    for url in ("/", "/?sort=bleu2&desc=1", f"/cell?item=it001&model={MODELS[0]}", "/agree",
                "/label?rater=alice", "/adjudicate"):
        assert client.get(url).status_code == 200, url
    saved = client.post("/api/label/label", json={"rater": "alice", "cell": cell, "label": "wrong"})
    assert saved.status_code == 200 and saved.json()["progress"]["done"] == 1
    assert client.post("/api/label/undo", json={"rater": "alice"}).status_code == 200
    assert len(opens) == before  # nine requests, two writes among them: no open
    # read-only until the rater's first visit wrote its session, read-write while labels come
    assert opens[-2:] == [(path, True), (path, False)]
    assert _gate(client).keeping and not _gate(client).keeping_read_only


def _read_elsewhere(path) -> subprocess.CompletedProcess:
    """What a user's own DuckDB client does: a second process opening the store read-only."""
    code = ("import duckdb, sys; con = duckdb.connect(sys.argv[1], read_only=True); "
            "print(con.execute('SELECT count(*) FROM labels').fetchone()[0])")
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                          timeout=60)


def test_a_users_own_read_only_client_reads_beside_an_idle_view(path, monkeypatch):
    from contam.harness.view import gate as gate_module

    client = view_client(path)
    assert _gate(client).keeping_read_only
    read = _read_elsewhere(path)
    assert read.returncode == 0 and read.stdout.strip() == "12", read.stderr
    cell = re.search(r'data-cell="([0-9a-f]+)"', client.get("/label?rater=alice").text)[1]
    monkeypatch.setattr(gate_module, "WRITE_HOLD_S", 0.0)  # writing stops at once
    saved = client.post("/api/label/label", json={"rater": "alice", "cell": cell, "label": "right"})
    assert saved.status_code == 200
    deadline = time.monotonic() + 30
    while not _gate(client).keeping_read_only:  # the watcher's swap
        assert time.monotonic() < deadline, "still read-write after the writes stopped"
        time.sleep(0.05)
    read = _read_elsewhere(path)
    assert read.returncode == 0 and read.stdout.strip() == "13", read.stderr


def test_a_job_gets_the_store_while_the_view_keeps_it_and_the_view_reads_through_it(path):
    client = view_client(path)
    assert _gate(client).keeping
    with held_elsewhere(path, serve=True):  # would fail to open the store if the view held on
        assert not _gate(client).keeping
        assert not wanted_path(path).exists()  # the job took its ask back once it had the store
        page = client.get(f"/?model={MODELS[0]}")
        assert page.status_code == 200 and '<p id="count">6 cells' in page.text
        assert not _gate(client).keeping  # read through the job's host, nothing kept
    with Store(path, read_only=True) as store:
        assert store.count("labels") == 12


def test_after_the_job_the_view_keeps_the_store_again(path):
    client = view_client(path)
    with held_elsewhere(path):
        pass
    assert client.get("/").status_code == 200
    assert _gate(client).keeping and _gate(client).opens == 2


def test_an_ask_not_yet_taken_back_keeps_the_view_off_the_store(path, monkeypatch):
    """Between the view letting go and the asker's next try, the view must not take it back."""
    from contam.harness.view import gate as gate_module

    client = view_client(path)
    ask_for(path)  # someone asked and is about to open the store
    assert client.get("/").status_code == 200
    assert not _gate(client).keeping  # answered by one short visit
    monkeypatch.setattr(gate_module, "HOLD_OFF_S", 0.0)  # the ask has grown old
    assert client.get("/").status_code == 200
    assert _gate(client).keeping and _gate(client).opens == 2


def test_the_ask_is_a_private_file_and_a_planted_one_is_ignored(path, tmp_path):
    ask_for(path)
    info = os.lstat(wanted_path(path))
    assert stat.S_IMODE(info.st_mode) == 0o600 and last_asked(path) == info.st_mtime
    wanted_path(path).unlink()
    os.symlink(tmp_path / "elsewhere", wanted_path(path))
    assert last_asked(path) == 0.0


def test_browse_sorts_once_per_filter_until_a_table_grows(path, monkeypatch):
    from contam.harness.view import browse as browsing

    sorted_ = []
    real = browsing._order
    monkeypatch.setattr(browsing, "_order", lambda store, query: sorted_.append(query) or
                        real(store, query))
    client = view_client(path)
    sorted_.clear()
    pages = [client.get(f"/?sort=bleu2&desc=1&page={n}").text for n in (1, 1, 1)]
    assert len(sorted_) == 1 and pages[0] == pages[2]
    client.get("/?sort=bleu2")  # another order: sorted once more
    assert len(sorted_) == 2
    client.post("/api/cell-label", json={"rater": "ann", "item": "it001", "model": MODELS[0],
                                         "label": "wrong"})
    labelled = client.get("/?sort=bleu2&desc=1").text  # the labels grew: sorted again
    assert len(sorted_) == 3 and "ann: wrong" in labelled


def test_the_server_socket_sends_without_waiting_for_acknowledgements():
    """TCP_NODELAY on the listening socket (inherited by each connection): without it a response's
    body waits for the client's delayed ACK of its headers, 40 ms a request."""
    import socket

    from contam.harness.view.app import _listen

    sock = _listen("127.0.0.1", 0)
    try:
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        sock.close()
