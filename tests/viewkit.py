"""A small store for `contam view`'s tests: items of two subsets, answers of models whose names
appear nowhere else (so a blind page can be searched for them), scores, a judge, and one answer
that is markup."""

from __future__ import annotations

from pathlib import Path

from contam.harness.store import Store, utc_now

__all__ = ["MODELS", "SUBSETS", "JUDGE", "MARKUP", "TOKEN", "RICH_CELL", "build_view_store",
           "add_rich_cell", "view_client", "report_page"]

MODELS = ("zorblax-7b", "quuxmodel-2")
SUBSETS = ("officialstratum", "fanstratum")
JUDGE = "judge:grader-x"
MARKUP = "<script>alert('pwned')</script><b>bold</b>"


def build_view_store(path: Path, items: int = 30, *, markup_item: int | None = 0,
                     blank_item: int | None = None) -> Path:
    """``items`` items x 2 models, all answered, scored and judged. Item ``markup_item``'s first
    model answered with markup; item ``blank_item``'s answers are blank."""
    now = utc_now()
    with Store(path, create=True) as store, store.transaction():
        store.append("items", [{
            "item_id": f"it{n:03d}", "title": f"Game {n % 3}", "subset": SUBSETS[n % 2],
            "question": f"Question number {n}?", "reference": f"Reference {n}.", "added_at": now}
            for n in range(items)])
        store.append("answers", [_answer(n, model, markup_item, blank_item, now)
                                 for n in range(items) for model in MODELS])
        store.append("scores", [{"item_id": f"it{n:03d}", "model": model, "metric": metric,
                                 "value": ((n * 7 + k * 3) % 10) / 10, "params": "{}"}
                                for n in range(items) for k, model in enumerate(MODELS)
                                for metric in ("bleu2", "bertscore_f1")])
        store.append("labels", [{"item_id": f"it{n:03d}", "model": model, "rater": JUDGE,
                                 "label": ("right", "partial", "wrong")[(n + k) % 3],
                                 "created_at": now}
                                for n in range(items) for k, model in enumerate(MODELS)])
    return path


# A cell with everything its page can show: no title, rule metrics beside the graded ones (one
# unscored), two judges, human labels with a note and one withdrawn, an answer the metrics read
# differently from its raw text.
RICH_CELL = ("rich01", MODELS[0])


def add_rich_cell(path: Path) -> Path:
    item, model = RICH_CELL
    now = utc_now()
    with Store(path) as store, store.transaction():
        store.append("items", [{"item_id": item, "title": None, "subset": SUBSETS[0],
                                "question": "Which river?", "reference": "Quellan.", "added_at": now}])
        store.append("answers", [{"run_id": "r1", "item_id": item, "model": model,
                                  "provider": "import", "answer_raw": "  The Quellan.\n",
                                  "answer": "The Quellan.", "created_at": now}])
        store.append("scores", [{"item_id": item, "model": model, "metric": metric,
                                 "value": value, "params": "{}"}
                                for metric, value in (("bleu2", 0.4), ("bertscore_f1", 0.9),
                                                      ("exact", 0.0), ("contains", 1.0),
                                                      ("numeric", None))])
        store.append("labels", [{"item_id": item, "model": model, "rater": rater, "label": label,
                                 "note": note, "retracted": retracted, "created_at": now}
                                for rater, label, note, retracted in (
                                    (JUDGE, "right", None, False), ("judge:second", "partial", None, False),
                                    ("human:ann", "right", "names the river", False),
                                    ("human:bo", "wrong", None, True))])
    return path


def _answer(n: int, model: str, markup_item: int | None, blank_item: int | None, now) -> dict:
    text = f"Answer {n} from answerer number {MODELS.index(model)}."
    if n == markup_item and model == MODELS[0]:
        text = MARKUP
    if n == blank_item:
        text = ""
    return {"run_id": "r1", "item_id": f"it{n:03d}", "model": model, "provider": "import",
            "answer_raw": text, "answer": text, "created_at": now}


TOKEN = "test-token-123"


def view_client(path: Path, **options):
    """A Starlette TestClient on `contam view`'s app for ``path``, token already in its cookie.
    ``options`` are view_options' (unblind, raters, overlap, seed)."""
    from starlette.testclient import TestClient

    from contam.harness.store.access import prepare
    from contam.harness.view import create_app, view_options

    prepare(path)
    client = TestClient(create_app(view_options(store=path, **options), TOKEN),
                        base_url="http://127.0.0.1:8780")
    assert client.get(f"/?token={TOKEN}").status_code == 200  # sets the cookie
    client.headers["X-Contam-Token"] = TOKEN
    return client


def report_page(client, url: str = "/report", tries: int = 600):
    """The report page once built: the view answers 202 ("building the report…") until then."""
    import time

    for _ in range(tries):
        response = client.get(url)
        if response.status_code != 202:
            return response
        time.sleep(0.1)
    raise AssertionError(f"{url}: still building after {tries} tries")
