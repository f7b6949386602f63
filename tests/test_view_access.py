"""Who may open and write what in `contam view`: the owner's token kept
beside the store across restarts, each rater's own link to their label desk alone, --raters
enforced on every write, no label without an answer, hostile bodies and pages, the Host header,
and bidi characters shown as escapes."""

from __future__ import annotations

import os
import re
import stat

import pytest
from starlette.testclient import TestClient

from contam.harness.errors import UserError
from contam.harness.store import Store
from contam.harness.view import create_app, view_options
from contam.harness.view.token import rater_token, stored_token
from tests.viewkit import MODELS, TOKEN, build_view_store, view_client


@pytest.fixture
def path(tmp_path):
    return build_view_store(tmp_path / "view.duckdb", items=6)


def _labels(path, where: str = "true") -> list[dict]:
    with Store(path, read_only=True) as store:
        return store.query_dicts(f"SELECT * FROM labels WHERE {where} ORDER BY seq")


def _cell_of(page: str) -> str:
    return re.search(r'data-cell="([0-9a-f]*)"', page).group(1)


def _rater_client(path, rater: str, **options) -> TestClient:
    """A browser that opened only ``rater``'s own link."""
    view_client(path, **options)  # migrates
    client = TestClient(create_app(view_options(store=path, **options), TOKEN),
                        base_url="http://127.0.0.1:8780")
    token = rater_token(TOKEN, f"human:{rater}")
    assert client.get(f"/label?token={token}").status_code == 200
    client.headers["X-Contam-Token"] = token
    return client


# -- the owner's token, kept beside the store -----------------------------------------------------

def test_the_token_survives_a_restart_and_new_token_replaces_it(path):
    first = stored_token(path)
    assert stored_token(path) == first  # a restarted server keeps its links
    token_file = path.with_name(path.name + ".view-token")
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    rotated = stored_token(path, rotate=True)
    assert rotated != first and stored_token(path) == rotated


def test_a_planted_link_is_replaced_never_followed(path, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    os.symlink(victim, path.with_name(path.name + ".view-token"))
    with pytest.raises(UserError, match="cannot read"):
        stored_token(path)  # a link is not read through either
    stored_token(path, rotate=True)
    assert victim.read_text() == "mine\n"  # the link itself was replaced
    assert not path.with_name(path.name + ".view-token").is_symlink()


def test_a_token_file_others_can_read_is_refused_in_one_line(path):
    token_file = path.with_name(path.name + ".view-token")
    token_file.write_text("guessable\n")
    token_file.chmod(0o644)
    with pytest.raises(UserError) as refused:
        stored_token(path)
    assert "mode 644, not 600" in str(refused.value) and "--new-token" in str(refused.value)


def test_a_page_with_an_unknown_token_says_the_server_has_a_new_link(path):
    view_client(path)
    client = TestClient(create_app(view_options(store=path), TOKEN), base_url="http://127.0.0.1")
    client.headers["X-Contam-Token"] = "an-old-token"
    refused = client.post("/api/label/label", json={"rater": "alice", "cell": "x", "label": "right"})
    assert refused.status_code == 403 and "has a new one" in refused.json()["error"]


# -- a rater's own link ---------------------------------------------------------------------------

@pytest.mark.parametrize("url", ["/", "/cell?item=it001&model=zorblax-7b", "/report", "/agree",
                                 "/adjudicate", "/label?rater=bob", "/api/progress"])
def test_a_raters_link_opens_only_their_label_desk(path, url):
    client = _rater_client(path, "alice")
    response = client.get(url)
    assert response.status_code == 403
    assert "only human:alice's label desk" in response.text
    assert all(model not in response.text for model in MODELS)


def test_a_raters_link_labels_as_that_rater_and_no_one_else(path):
    client = _rater_client(path, "alice")
    page = client.get("/label")
    assert page.status_code == 200 and "human:alice" in page.text
    cell = _cell_of(page.text)
    assert client.post("/api/label/label", json={"cell": cell, "label": "right"}).status_code == 200
    impostor = client.post("/api/label/label", json={"rater": "bob", "cell": cell, "label": "wrong"})
    assert impostor.status_code == 403
    for refused in ("/api/cell-label", "/api/agreed", "/api/adjudicate/label"):
        assert client.post(refused, json={"rater": "alice", "item": "it001", "model": MODELS[0],
                                          "label": "right"}).status_code == 403
    assert [r["rater"] for r in _labels(path)
            if r["rater"].startswith("human")] == ["human:alice"]


def test_contam_view_prints_each_raters_own_link(path, monkeypatch):
    from contam.harness.view import app

    printed: list[str] = []

    class Stopped(Exception):
        pass

    def no_serving(self, sockets):
        raise Stopped

    monkeypatch.setattr("uvicorn.Server.run", no_serving)
    with pytest.raises(Stopped):
        app.serve(view_options(store=path, port=0, raters="alice,bob"), on_ready=printed.append)
    owner = stored_token(path)
    assert printed[0].endswith(f"/?token={owner}")
    assert printed[1].startswith("human:alice's own link (the label desk only): http://127.0.0.1:")
    assert printed[1].endswith(f"/label?token={rater_token(owner, 'human:alice')}")
    assert printed[2].endswith(f"/label?token={rater_token(owner, 'human:bob')}")


# -- --raters on writes, ghost labels, hostile bodies -------------------------------------------

def test_raters_are_enforced_on_every_write(path):
    client = view_client(path, raters="alice,bob")
    alices = _cell_of(client.get("/label?rater=alice").text)
    stolen = client.post("/api/label/label", json={"rater": "bob", "cell": alices, "label": "wrong"})
    assert stolen.status_code == 403 and "not one of human:bob's" in stolen.json()["error"]
    outsider = client.post("/api/cell-label", json={"rater": "mallory", "item": "it001",
                                                    "model": MODELS[0], "label": "right"})
    assert outsider.status_code == 403 and "not one of this study's raters" in outsider.json()["error"]
    assert _labels(path, "rater LIKE 'human%'") == []


def test_a_label_for_a_cell_without_an_answer_is_refused(path):
    client = view_client(path)
    ghost = client.post("/api/cell-label", json={"rater": "alice", "item": "it999",
                                                 "model": MODELS[0], "label": "right"})
    assert ghost.status_code == 400 and "no answer" in ghost.json()["error"]
    assert _labels(path, "item_id = 'it999'") == []


@pytest.mark.parametrize("note", [12345, {}, [], True])
def test_a_note_that_is_not_text_is_a_400_not_a_500(path, note):
    client = view_client(path)
    cell = _cell_of(client.get("/label?rater=alice").text)
    response = client.post("/api/label/label", json={"rater": "alice", "cell": cell,
                                                     "label": "right", "note": note})
    assert response.status_code == 400 and response.json()["error"] == "a note is text"
    cell_page = client.post("/api/cell-label", json={"rater": "alice", "item": "it001",
                                                     "model": MODELS[0], "label": "right", "note": note})
    assert cell_page.status_code == 400


def test_a_page_number_beyond_64_bits_is_clamped(path):
    client = view_client(path)
    response = client.get("/?page=" + "9" * 40)
    assert response.status_code == 200 and "it00" in response.text


# -- the Host header ------------------------------------------------------------------------------

def test_a_foreign_host_name_is_refused_even_with_the_token(path):
    client = view_client(path)
    assert client.get("/", headers={"host": "evil.example"}).status_code == 400
    assert client.get("/", headers={"host": "evil.example:8780"}).status_code == 400
    for served in ("127.0.0.1:8780", "localhost:8780", "[::1]:8780"):
        assert client.get("/", headers={"host": served}).status_code == 200, served


def test_a_server_on_every_interface_answers_ip_literals_not_other_names(path):
    view_client(path)
    client = TestClient(create_app(view_options(store=path, host="0.0.0.0"), TOKEN),
                        base_url="http://192.0.2.7:8780")
    assert client.get(f"/?token={TOKEN}").status_code == 200
    assert client.get("/", headers={"host": "rebound.example"}).status_code == 400


# -- what a rater reads -----------------------------------------------------------------------------

def test_a_bidi_override_in_an_answer_is_shown_as_an_escape(path):
    with Store(path) as store:
        store.append("answers", [{"run_id": "r2", "item_id": f"it{n:03d}", "model": m,
                                  "answer_raw": "abc\u202edef", "answer": "abc\u202edef"}
                                 for n in range(6) for m in MODELS])
    client = view_client(path)
    page = client.get("/label?rater=alice").text
    assert "\u202e" not in page and "abc\\u202edef" in page
    cell_page = client.get(f"/cell?item=it001&model={MODELS[0]}").text
    assert "\u202e" not in cell_page
