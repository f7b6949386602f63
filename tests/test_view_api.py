"""`contam view` through its HTTP interface (Starlette's TestClient): the token, blind labelling,
escaping, resume, undo and skip, sessions, raters' shares, agreement and adjudication."""

from __future__ import annotations

import json
import re

import pytest
from starlette.testclient import TestClient

from contam.harness.report.statistics import named_tests as stats
from contam.harness.store import Store
from contam.harness.view import create_app, view_options
from contam.harness.view.queue import Share, order_key
from tests.viewkit import JUDGE, MARKUP, MODELS, SUBSETS, TOKEN, build_view_store, report_page, view_client


@pytest.fixture
def path(tmp_path):
    return build_view_store(tmp_path / "view.duckdb", items=12)


@pytest.fixture
def small(tmp_path):
    """Six items: few enough for a test to label every cell through the API."""
    return build_view_store(tmp_path / "small.duckdb", items=6)


def _cell_of(page: str) -> str:
    return re.search(r'data-cell="([0-9a-f]*)"', page).group(1)


def _label(client: TestClient, rater: str, cell: str, label: str, **extra) -> dict:
    response = client.post("/api/label/label", json={"rater": rater, "cell": cell, "label": label,
                                                      **extra})
    assert response.status_code == 200, response.text
    return response.json()


def _labels(path, where: str = "true") -> list[dict]:
    with Store(path, read_only=True) as store:
        return store.query_dicts(f"SELECT * FROM labels WHERE {where} ORDER BY seq")


# -- the token ----------------------------------------------------------------------------------

def test_requests_without_the_token_are_refused_and_get_no_data(path):
    view_client(path)  # migrates the store
    bare = TestClient(create_app(view_options(store=path), TOKEN), base_url="http://127.0.0.1")
    for url in ("/", "/label?rater=alice", "/cell?item=it001&model=zorblax-7b", "/api/progress",
                "/static/view.js", "/report", "/?token=wrong"):
        response = bare.get(url)
        assert response.status_code == 403, url
        assert "Question" not in response.text and MODELS[0] not in response.text
    refused = bare.post("/api/label/label", json={"rater": "a", "cell": "x", "label": "right"})
    assert refused.status_code == 403


def test_the_token_in_the_url_becomes_a_strict_httponly_cookie(path):
    view_client(path)
    client = TestClient(create_app(view_options(store=path, port=9999), TOKEN), base_url="http://127.0.0.1")
    response = client.get(f"/?token={TOKEN}")
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"contam_view_9999={TOKEN};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert client.get("/label?rater=alice").status_code == 200  # the cookie alone, for reading
    assert "default-src 'none'" in response.headers["content-security-policy"]


def test_a_write_needs_the_token_header_not_only_the_cookie(path):
    client = view_client(path)
    cell = _cell_of(client.get("/label?rater=alice").text)
    del client.headers["X-Contam-Token"]
    refused = client.post("/api/label/label", json={"rater": "alice", "cell": cell, "label": "right"})
    assert refused.status_code == 403
    assert _labels(path, "rater = 'human:alice'") == []


# -- blind labelling ----------------------------------------------------------------------------

def _no_hidden_facts(text: str) -> None:
    for secret in (*MODELS, *SUBSETS, JUDGE, "bleu", "bertscore", "judge", "it0"):
        assert secret.lower() not in text.lower(), secret


def test_blind_pages_and_answers_name_no_model_subset_score_or_item(path):
    client = view_client(path)
    page = client.get("/label?rater=alice").text
    _no_hidden_facts(page)
    cell = _cell_of(page)
    for label in ("right", "wrong", "partial", "right"):
        reply = _label(client, "alice", cell, label)
        _no_hidden_facts(str(reply))
        cell = reply["cell"]["id"]
    _no_hidden_facts(client.post("/api/label/undo", json={"rater": "alice"}).text)
    _no_hidden_facts(client.get("/label?rater=alice").text)


def test_unblinded_pages_show_model_subset_and_scores(path):
    client = view_client(path, unblind=True)
    page = client.get("/label?rater=alice").text
    assert any(m in page for m in MODELS) and any(s in page for s in SUBSETS)
    assert "BLEU-2" in page and 'id="c-judge"' in page


def test_markup_in_an_answer_is_text_on_every_page(path):
    seed = next(s for s in range(10_000) if min(
        ((f"it{n:03d}", m) for n in range(12) for m in MODELS),
        key=lambda k: order_key(s, *k)) == ("it000", MODELS[0]))
    client = view_client(path, seed=seed)
    escaped = "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;"
    pages = [client.get("/label?rater=alice").text,
             client.get(f"/?model={MODELS[0]}").text,
             client.get(f"/cell?item=it000&model={MODELS[0]}").text]
    for page in pages:
        assert escaped in page
        assert "<script>alert" not in page and "<b>bold" not in page
    assert _label(client, "alice", _cell_of(pages[0]), "wrong")["cell"]["answer"] != MARKUP


# -- writes, resume, undo, skip, sessions -------------------------------------------------------

def _order(seed: int, items: int = 12) -> list[tuple[str, str]]:
    return sorted(((f"it{n:03d}", m) for n in range(items) for m in MODELS),
                  key=lambda k: order_key(seed, *k))


def test_each_label_is_stored_at_once_and_a_new_server_resumes_after_it(path):
    client = view_client(path, seed=5)
    cell = _cell_of(client.get("/label?rater=alice").text)
    for n in range(5):
        reply = _label(client, "alice", cell, "right", note="half" if n == 2 else None)
        cell = reply["cell"]["id"]
        assert len(_labels(path, "rater = 'human:alice'")) == n + 1  # committed before the reply
    assert reply["progress"]["done"] == 5 and reply["progress"]["text"].startswith("5 / 24")
    rows = _labels(path, "rater = 'human:alice'")
    assert [(r["item_id"], r["model"]) for r in rows] == _order(5)[:5]
    assert rows[2]["note"] == "half" and rows[0]["run_id"].startswith("view:")
    assert all(r["created_at"] is not None for r in rows)  # stamped by the append
    again = view_client(path, seed=99)  # another server; the recorded seed (5) still rules
    page = again.get("/label?rater=alice").text
    nxt = _order(5)[5]
    assert f"Question number {int(nxt[0][2:])}?" in page and "5 / 24" in page


def test_the_first_visit_records_the_raters_seed(path):
    client = view_client(path, seed=31, raters="alice,bob", overlap=0.5)
    client.get("/label?rater=alice")
    with Store(path, read_only=True) as store:
        session = store.query_dicts("SELECT * FROM label_sessions")
    assert [(s["rater"], s["seed"], s["blind"], s["overlap"]) for s in session] == \
        [("human:alice", 31, True, 0.5)]
    assert session[0]["raters"] == '["human:alice", "human:bob"]' and session[0]["created_at"]


def test_undo_withdraws_the_last_label_with_a_newer_row_and_shows_its_cell(path):
    client = view_client(path, seed=5)
    page = client.get("/label?rater=alice").text
    first = _cell_of(page)
    _label(client, "alice", first, "partial")
    reply = client.post("/api/label/undo", json={"rater": "alice"}).json()
    assert reply["cell"]["id"] == first and reply["said"] == "Undone: Partially right"
    rows = _labels(path, "rater = 'human:alice'")
    assert [(r["label"], r["retracted"]) for r in rows] == [("partial", None), ("partial", True)]
    assert reply["progress"]["done"] == 0
    assert client.post("/api/label/undo", json={"rater": "alice"}).json()["said"] == "Nothing to undo"


def test_skip_writes_nothing_and_the_cell_comes_back_last(path):
    client = view_client(path, seed=5)
    first = _cell_of(client.get("/label?rater=alice").text)
    reply = client.post("/api/label/skip", json={"rater": "alice", "cell": first}).json()
    assert reply["cell"]["id"] != first and _labels(path) == _labels(path, "rater LIKE 'judge:%'")


def test_a_cell_id_from_before_a_restart_is_refused_as_stale(path):
    old = view_client(path)
    cell = _cell_of(old.get("/label?rater=alice").text)
    new = view_client(path)
    response = new.post("/api/label/label", json={"rater": "alice", "cell": cell, "label": "right"})
    assert response.status_code == 409 and response.json()["stale"] is True


def test_bad_raters_and_labels_are_refused_in_one_line(path):
    client = view_client(path, raters="alice,bob")
    assert "human:carol is not one of this study" in client.get("/label?rater=carol").text
    assert "human:adjudicated" in client.get("/label?rater=adjudicated").text
    cell = _cell_of(client.get("/label?rater=alice").text)
    response = client.post("/api/label/label", json={"rater": "alice", "cell": cell, "label": "maybe"})
    assert response.status_code == 400 and "one of right, partial, wrong" in response.json()["error"]


# -- several raters, agreement, adjudication ----------------------------------------------------

def _label_everything(client: TestClient, rater: str, choose) -> list[tuple[str, str]]:
    """Label all of the rater's cells, ``choose(n)`` giving the n-th label; returns the keys in
    the order they were labelled (read back from the store)."""
    reply = {"cell": {"id": _cell_of(client.get(f"/label?rater={rater}").text)}}
    n = 0
    while reply["cell"] is not None:
        reply = _label(client, rater, reply["cell"]["id"], choose(n))
        n += 1
    return n


def _store_labels(path, rater: str, choose) -> None:
    """Label every cell straight into the store (the tests of what is done with labels)."""
    keys = [(f"it{n:03d}", m) for n in range(6) for m in MODELS]
    with Store(path) as store:
        store.append("labels", [{"item_id": i, "model": m, "rater": f"human:{rater}",
                                 "label": choose(n)} for n, (i, m) in enumerate(keys)])


def test_two_raters_split_the_cells_with_overlap_and_get_cohens_kappa(small):
    path = small
    client = view_client(path, raters="alice,bob", overlap=0.5)
    labels = ("right", "partial", "wrong")
    done_a = _label_everything(client, "alice", lambda n: labels[n % 3])
    done_b = _label_everything(client, "bob", lambda n: labels[(n // 2) % 3])
    keys = [(f"it{n:03d}", m) for n in range(6) for m in MODELS]
    assert done_a == sum(Share(0, 2, 0.5).holds(*k) for k in keys)
    assert done_b == sum(Share(1, 2, 0.5).holds(*k) for k in keys)
    with Store(path, read_only=True) as store:
        pairs = store.query("SELECT a.label, b.label FROM latest_labels a JOIN latest_labels b "
                            "USING (item_id, model) WHERE a.rater = 'human:alice' "
                            "AND b.rater = 'human:bob'")
    expected = stats.cohen_kappa(stats.confusion_matrix(pairs, labels))
    page = client.get("/agree").text
    assert f'<td data-label="Cohen\'s κ" class="num kappa">{expected:.3f}</td>' in page
    assert ('<td data-label="Rater">human:alice</td><td data-label="Rater">human:bob</td>'
            in page)
    assert f'<td data-label="Cells" class="num">{len(pairs)}</td>' in page
    assert "judge:grader-x" in page and "id=\"fleiss\"" not in page


def test_three_raters_get_fleiss_kappa(small):
    client = view_client(small)
    for rater, shift in (("a", 0), ("b", 0), ("c", 1)):
        _store_labels(small, rater, lambda n, s=shift: ("right", "wrong")[(n + s) % 2])
    fragment = client.get("/agree?fragment=1").text
    assert "Fleiss" in fragment and "rated by 3 raters each" in fragment
    assert "<html" not in fragment  # the piece the page refreshes itself with


def test_the_agreement_page_and_the_report_agree_on_raters_pairs_and_fleiss(small):
    """Both leave the adjudicator out, build each pair's row alike, and take Fleiss' kappa over
    the cells every rater labelled (here none: c and d labelled half the cells each)."""
    from contam.harness.report.analysis import build_report
    from contam.harness.store.access import reading
    from contam.harness.view.agreement import agreement

    view_client(small)
    _store_labels(small, "a", lambda n: ("right", "wrong")[n % 2])
    _store_labels(small, "b", lambda n: ("right", "partial", "wrong")[n % 3])
    _store_labels(small, "adjudicated", lambda n: "right")
    halves = [(f"it{n:03d}", m) for n in range(6) for m in MODELS]
    with Store(small) as store:
        store.append("labels", [{"item_id": i, "model": m, "rater": "human:c" if n < 6 else "human:d",
                                 "label": ("wrong", "right")[n % 2]} for n, (i, m) in enumerate(halves)])
    with reading(small) as store:
        view = agreement(store)
        report = build_report(store, contrast=SUBSETS).inter_annotator
    assert view.raters == report["raters"] == ["human:a", "human:b", "human:c", "human:d"]
    # the view adds κ's interval to the report's rows
    assert [{k: v for k, v in p.items() if k != "kappa_ci"} for p in view.pairs] == \
        [p for p in report["pairwise"] if p["n"]]
    assert all(p["kappa_ci"] == stats.cohen_kappa_interval(p["confusion"]) for p in view.pairs)
    assert view.fleiss is None and report["fleiss_kappa"] is None and report["n_all_raters"] == 0


def test_the_agreement_page_is_computed_again_only_once_labels_change(small, monkeypatch):
    from contam.harness.view import agreement as module

    calls = []
    monkeypatch.setattr("contam.harness.view.routes.agreement",
                        lambda store: calls.append(1) or module.agreement(store))
    client = view_client(small)
    _store_labels(small, "a", lambda n: "right")
    pages = [client.get("/agree?fragment=1").text for _ in range(3)]
    _store_labels(small, "b", lambda n: "wrong")
    changed = client.get("/agree?fragment=1").text
    assert len(calls) == 2 and pages[0] == pages[2] and "human:b" in changed


def test_adjudication_settles_disagreements_and_the_report_reads_it(small, contam):
    path = small
    client = view_client(path)
    _store_labels(path, "alice", lambda n: "right")
    _store_labels(path, "bob", lambda n: "wrong" if n < 4 else "right")
    page = client.get("/adjudicate").text
    assert "human:alice: right" in page and "human:bob: wrong" in page
    reply = client.post("/api/adjudicate/label", json={"cell": _cell_of(page), "label": "partial"}).json()
    assert reply["progress"]["done"] == 1 and reply["progress"]["total"] == 4
    assert client.post("/api/agreed").json() == {"written": 8}
    settled = _labels(path, "rater = 'human:adjudicated'")
    assert len(settled) == 9 and settled[-1]["note"] == "agreed: human:alice, human:bob"
    status, out, err = contam("report", "--store", path, "--format", "json", "--human",
                              "human:adjudicated", "--contrast", ",".join(SUBSETS))
    assert status == 0, err
    assert '"human_rater": "human:adjudicated"' in out


def test_taking_agreed_labels_settles_only_cells_two_raters_labelled_alike(small):
    """One rater's label is no agreement; only cells that two raters labelled
    alike are settled, and cells only one rater labelled stay unsettled."""
    client = view_client(small)
    _store_labels(small, "alice", lambda n: "right")
    with Store(small) as store:  # bob labels three of the twelve cells: two alike, one not
        store.append("labels", [{"item_id": i, "model": MODELS[0], "rater": "human:bob", "label": lab}
                                for i, lab in (("it000", "right"), ("it001", "right"), ("it002", "wrong"))])
    assert client.post("/api/agreed").json() == {"written": 2}
    settled = _labels(small, "rater = 'human:adjudicated'")
    assert sorted(r["item_id"] for r in settled) == ["it000", "it001"]
    assert all(r["note"] == "agreed: human:alice, human:bob" for r in settled)


def test_a_settled_cell_whose_raters_come_to_agree_later_is_settled_again(small):
    client = view_client(small)
    _store_labels(small, "alice", lambda n: "right")
    _store_labels(small, "bob", lambda n: "wrong" if n < 4 else "right")
    disputed, agreed = ("it000", MODELS[0]), ("it005", MODELS[1])
    with Store(small) as store:  # the adjudicator settles one of bob's four disagreements
        store.append("labels", [{"item_id": disputed[0], "model": disputed[1], "label": "partial",
                                 "rater": "human:adjudicated"}])
    assert client.post("/api/agreed").json() == {"written": 8}
    with Store(small) as store:  # bob comes round on it, and says again what he said on another
        store.append("labels", [{"item_id": i, "model": m, "rater": "human:bob", "label": "right"}
                                for i, m in (disputed, agreed)])
    assert client.post("/api/agreed").json() == {"written": 1}
    settled = _labels(small, "rater = 'human:adjudicated'")
    assert len(settled) == 10 and (settled[-1]["item_id"], settled[-1]["model"]) == disputed
    assert settled[-1]["label"] == "right" and client.post("/api/agreed").json() == {"written": 0}


# -- browse, the cell page, live progress, the report -------------------------------------------

def test_live_progress_is_served_when_a_run_holds_the_store(path, monkeypatch):
    client = view_client(path)
    with Store(path, read_only=True) as store:
        answers = store.count("answers")
    assert client.get("/api/progress").json() == {"models": None}
    # the count of answers, for the browse page's "N new answers", once asked after a run
    assert client.get("/api/progress?answers=1").json() == {"models": None, "answers": answers}
    lanes = [{"model": "m", "done": 3, "total": 9, "failed": 0, "retries": 1, "rate_limited": 0,
              "in_flight": 2, "concurrency": 4, "rate_per_s": 1.5, "cooling_down_s": 0,
              "stopped": None}]
    monkeypatch.setattr("contam.harness.store.access.live_progress", lambda store: lanes)
    assert client.get("/api/progress").json() == {"models": lanes, "answers": answers}
    page = client.get("/").text
    assert 'id="live"' in page and f'data-answers="{answers}"' in page


def test_the_cell_page_shows_every_attempt_and_label(path):
    with Store(path) as store:
        store.append("attempts", [
            {"run_id": "r1", "item_id": "it003", "model": MODELS[1], "attempt": 1,
             "outcome": "rate_limited", "http_status": 429, "latency_s": 0.2, "error": "slow down"},
            {"run_id": "r1", "item_id": "it003", "model": MODELS[1], "attempt": 2, "outcome": "ok",
             "http_status": 200, "latency_s": 0.4}])
    client = view_client(path)
    client.post("/api/cell-label", json={"item": "it003", "model": MODELS[1], "rater": "dora",
                                         "label": "wrong", "note": "made up"})
    page = client.get(f"/cell?item=it003&model={MODELS[1]}").text
    assert "rate_limited" in page and "slow down" in page and "429" in page
    assert "human:dora" in page and "made up" in page and JUDGE in page
    assert client.get("/cell?item=nope&model=x").status_code == 404


def test_the_report_page_is_the_reports_html_with_its_figures(small):
    """Seconds, not milliseconds: the page draws the report's four figures (matplotlib)."""
    client = view_client(small)
    _store_labels(small, "alice", lambda n: ("right", "wrong")[n % 2])
    url = f"/report?contrast={','.join(SUBSETS)}"
    building = client.get(url)
    assert building.status_code == 202 and "Building the report" in building.text
    response = report_page(client, url)
    assert response.status_code == 200
    assert "data:image/png;base64," in response.text and "human:alice" in response.text
    assert "img-src 'self' data:" in response.headers["content-security-policy"]
    assert "'unsafe-inline'" not in response.headers["content-security-policy"]
    chosen = report_page(client, "/report")  # no contrast the store has: built without one
    assert chosen.status_code == 200 and "Not in this report" in chosen.text
    named = report_page(client, "/report?contrast=official,fan")  # a contrast asked for is checked
    assert named.status_code == 400 and "subset &#39;official&#39; has no items" in named.text


def test_the_report_page_is_built_again_once_a_probe_has_scored(small):
    """The report reads more than items, answers, labels and scores: a probe's scores count."""
    client = view_client(small)
    url = f"/report?contrast={','.join(SUBSETS)}"
    assert "Probe: cdd" not in report_page(client, url).text
    params = {"samples": 4, "temperature": 0.8, "alpha": 0.05, "xi": 0.01}
    with Store(small) as store:
        store.append("probe_params", [{"params_sha256": "c" * 64, "probe": "cdd",
                                       "params": json.dumps(params)}])
        store.append("probe_scores", [
            {"run_id": "p1", "probe": "cdd", "params_sha256": "c" * 64, "item_id": f"it{n:03d}",
             "model": MODELS[0], "metric": metric, "value": value}
            for n in range(6) for metric, value in (("peakedness", n / 5), ("flagged", n % 2))])
    assert "Probe: cdd" in report_page(client, url).text


# -- while a job holds the store ----------------------------------------------------------------

def test_everything_works_through_the_host_of_a_job_holding_the_store(path):
    """A job (here an in-process StoreHost over an open writer) holds the store: the view's
    reads, label and session writes and the live progress all go through its host."""
    from contam.harness.store.access import reading
    from contam.harness.store.host import StoreHost

    view_client(path)  # migrated before the job takes the store
    lanes = [{"model": "m", "done": 1, "total": 4, "failed": 0, "retries": 0, "rate_limited": 2,
              "in_flight": 1, "concurrency": 2, "rate_per_s": 0.5, "cooling_down_s": 3.0,
              "stopped": None}]
    with Store(path) as held, StoreHost(held, command="run", progress=lambda: lanes):
        with reading(path) as reader:
            assert reader.through_host
        client = view_client(path, seed=5)
        answers = held.count("answers")
        assert client.get("/api/progress").json() == {"models": lanes, "answers": answers}
        page = client.get("/label?rater=alice").text
        reply = _label(client, "alice", _cell_of(page), "wrong", note="through the host")
        assert reply["progress"]["done"] == 1
        assert client.post("/api/label/undo", json={"rater": "alice"}).json()["progress"]["done"] == 0
        assert "<p id=\"count\">12 cells" in client.get(f"/?model={MODELS[0]}").text
        assert client.get("/agree").status_code == 200
        rows = held.query_dicts("SELECT rater, label, note, retracted FROM labels "
                                "WHERE rater = 'human:alice' ORDER BY seq")
        sessions = held.query("SELECT rater, seed FROM label_sessions")
    assert rows == [{"rater": "human:alice", "label": "wrong", "note": "through the host",
                     "retracted": None},
                    {"rater": "human:alice", "label": "wrong", "note": None, "retracted": True}]
    assert sessions == [("human:alice", 5)]


def test_a_store_locked_by_a_process_that_serves_no_reads_is_a_one_line_503(path, monkeypatch):
    from contam.harness.store import store as store_module

    from tests.holderkit import held_elsewhere

    client = view_client(path)  # keeps the store open: the holder asks for it and gets it
    monkeypatch.setattr(store_module, "LOCK_WAIT_S", 0.2)
    with held_elsewhere(path):  # a writer of another process that serves no reads
        page = client.get("/")
        assert page.status_code == 503 and "locked by" in page.text
        api = client.post("/api/label/undo", json={"rater": "alice"})
        assert api.status_code == 503 and "locked by" in api.json()["error"]
    assert client.get("/").status_code == 200


# -- errors and hidden characters ---------------------------------------------------------------

def test_a_skip_before_the_raters_desk_was_opened_is_answered_not_a_500(path):
    client = view_client(path)
    cell = _cell_of(client.get("/label?rater=alice").text)
    response = client.post("/api/label/skip", json={"rater": "bob", "cell": cell})
    assert response.status_code == 200 and response.json()["said"].startswith("Skipped")


def test_every_api_error_is_a_json_body_with_a_4xx(path):
    client = view_client(path)
    asked = [("POST", "/api/nothing-here", {}, 404), ("GET", "/api/label/skip", None, 405),
             ("POST", "/api/label/nope", {}, 404), ("POST", "/api/label/skip", {}, 400),
             ("POST", "/api/label/skip", {"rater": "a", "cell": "gone"}, 409),
             ("POST", "/api/cell-label", {"rater": "a"}, 400)]
    for method, url, body, status in asked:
        response = client.request(method, url, json=body)
        assert response.status_code == status, (url, response.text)
        assert response.headers["content-type"] == "application/json" and response.json()["error"]


def test_a_bug_behind_the_api_is_still_one_json_line(path, monkeypatch):
    from contam.harness.view.labelling import LabelDesk

    def broken(self, rater, cell_id):
        raise KeyError(rater)

    monkeypatch.setattr(LabelDesk, "skip", broken)
    client = view_client(path)
    cell = _cell_of(client.get("/label?rater=alice").text)
    quiet = TestClient(client.app, base_url="http://127.0.0.1:8780", cookies=client.cookies,
                       headers=client.headers, raise_server_exceptions=False)
    response = quiet.post("/api/label/skip", json={"rater": "alice", "cell": cell})
    assert response.status_code == 500 and response.json() == {
        "error": "the view failed (KeyError); see its log"}


HIDDEN = "left\u202eright zero\u200bwidth esc\x1b[31m"


def test_bidi_zero_width_and_control_characters_are_escaped_on_every_page(path):
    with Store(path) as store:
        store.append("answers", [{"run_id": "r1", "item_id": "it001", "model": MODELS[0],
                                  "provider": "import", "answer": HIDDEN}])
    client = view_client(path, unblind=True)
    for url in ("/", f"/?model={MODELS[0]}", f"/cell?item=it001&model={MODELS[0]}"):
        page = client.get(url).text
        assert not {"\u202e", "\u200b", "\x1b"} & set(page), url
        assert r"left\u202eright zero\u200bwidth esc\x1b[31m" in page, url
