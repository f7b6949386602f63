"""The pages and the JSON endpoints their script calls. Handlers are thin: read the request, ask a
desk or a query module, render a template (Jinja2, autoescaped: whatever a model or a user wrote
is shown as text) or return JSON.

Pages: ``/`` browse, ``/label`` a rater's queue, ``/adjudicate`` the disagreement queue,
``/cell`` one cell, ``/agree`` agreement, ``/report`` the report of `contam report`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from contam.harness.errors import UserError
from contam.harness.labels import LABEL_KEYS, LABEL_NAMES, LABELS
from contam.harness.report.writers import html as report_html
from contam.harness.store.raters import ADJUDICATOR
from contam.harness.store.store import StoreInUse
from contam.harness.view import browse as browsing
from contam.harness.view.agreement import agreement
from contam.harness.view.cells import cell_content, cell_record
from contam.harness.view.follow import Rebuilt, store_version
from contam.harness.view.formats import interval, metric_display, when
from contam.harness.view.gate import StoreGate
from contam.harness.view.labelling import (AdjudicationDesk, CellIds, LabelDesk, NotYours, StaleCell,
                                    label_row)
from contam.harness.view.options import ViewOptions, rater_name
from contam.harness.view.present import (number, onward_links, progress_text, screen_json, short,
                                  shown)
from contam.harness.view.reporting import ReportPages

__all__ = ["View"]

HERE = Path(__file__).parent


class View:
    """The app's state (options, the gate to the store, the desks) and its routes."""

    def __init__(self, options: ViewOptions, token: str) -> None:
        self.options, self.token = options, token
        self.gate = StoreGate(options.store)
        ids = CellIds()
        self.desk = LabelDesk(self.gate, options, ids)
        self.adjudication = AdjudicationDesk(self.gate, options, ids)
        self.reports = ReportPages(self.gate)
        env = report_html.environment(HERE / "templates")  # the report's templates and layout too
        dash = env.finalize  # the report's: a missing value (None) prints as its dash
        # before any template is compiled, every value on every page: the dash, then the escapes
        env.finalize = lambda value: shown(dash(value))
        env.filters.update(number=number, short=short, progress=progress_text)
        env.filters.update(when=when, metric=metric_display, interval=interval)
        env.globals.update(token=token, blind=options.blind, columns=browsing.COLUMNS,
                           label_filters=browsing.LABEL_FILTERS, raters=options.raters,
                           labels=[(label, LABEL_NAMES[label], LABEL_KEYS[label]) for label in LABELS],
                           adjudicator=ADJUDICATOR)  # the vocabulary, never spelt in a template
        self.templates = Jinja2Templates(env=env)
        self.choices = Rebuilt(browsing.filter_choices, ("items", "answers", "labels"))
        self.orders = browsing.OrderCache()  # each filter and sort's cells, until the tables grow
        self.agreement = Rebuilt(agreement, ("labels",))  # the page asks again every 5 s

    def refused(self, request: Request, exc: Exception) -> Response:
        """A UserError no handler caught (the store locked by a process that serves no reads,
        say): one line, as JSON for the page's script or as a page; 503 while the store is busy."""
        status = 503 if isinstance(exc, StoreInUse) else 403 if isinstance(exc, NotYours) else 400
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": str(exc)}, status_code=status)
        return self.error(request, str(exc), status)

    def http_error(self, request: Request, exc: Exception) -> Response:
        """No such route or method: JSON under /api (what the page's script reads), else text."""
        assert isinstance(exc, HTTPException)
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": exc.detail}, status_code=exc.status_code,
                                headers=exc.headers)
        return PlainTextResponse(exc.detail, status_code=exc.status_code, headers=exc.headers)

    def failed(self, request: Request, exc: Exception) -> Response:
        """A bug: one line for the page's script under /api (the traceback goes to the log)."""
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": f"the view failed ({type(exc).__name__}); see its log"},
                                status_code=500)
        return self.error(request, f"the view failed ({type(exc).__name__})", 500)

    def routes(self) -> list:
        return [
            Route("/", self.browse), Route("/label", self.label), Route("/cell", self.cell),
            Route("/adjudicate", self.adjudicate), Route("/agree", self.agree),
            Route("/report", self.report),
            _report_stylesheet("report.css"), _report_stylesheet("layout.css"),  # every page's
            Route("/api/progress", self.live_progress),
            Route("/api/label/{action}", self.label_action, methods=["POST"]),
            Route("/api/adjudicate/{action}", self.adjudicate_action, methods=["POST"]),
            Route("/api/agreed", self.settle_agreed, methods=["POST"]),
            Route("/api/cell-label", self.cell_label, methods=["POST"]),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]

    # -- pages (run in the thread pool: they wait on the store) ---------------------------------

    def page(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        return self.templates.TemplateResponse(request, name, context, status_code=status)

    def error(self, request: Request, message: str, status: int = 400) -> Response:
        return self.page(request, "error.html", status, message=message)

    def browse(self, request: Request) -> Response:
        query = browsing.BrowseQuery.from_params(request.query_params)
        with self.gate.reading() as store:
            result = browsing.browse(store, query, self.orders)
            choices = self.choices.get(store)
            answers = _answer_rows(store)  # the page's script says how many arrive after it
        # result.query: a page past the end was answered with the last page, and says so
        return self.page(request, "browse.html", page=result, query=result.query, choices=choices,
                         answers=answers)

    def label(self, request: Request) -> Response:
        given = request.state.rater or request.query_params.get("rater", "").strip()
        if not given:
            return self.page(request, "label_start.html")
        screen = self.desk.screen(rater_name(given))  # a refused name: View.refused
        onward = onward_links("label", own_link=request.state.rater is not None,
                              blind=self.options.blind)
        return self.page(request, "label.html", screen=screen, mode="label", onward=onward)

    def adjudicate(self, request: Request) -> Response:
        return self.page(request, "label.html", screen=self.adjudication.screen(), mode="adjudicate",
                         onward=onward_links("adjudicate", own_link=False, blind=self.options.blind))

    def cell(self, request: Request) -> Response:
        item, model = request.query_params.get("item", ""), request.query_params.get("model", "")
        with self.gate.reading() as store:
            record = cell_record(store, item, model)
        if record is None:
            return self.error(request, "no such cell: the store has no answer for that item and "
                                       "model", 404)
        return self.page(request, "cell.html", cell=record)

    def agree(self, request: Request) -> Response:
        with self.gate.reading() as store:
            result = self.agreement.get(store)
        name = "agree_tables.html" if request.query_params.get("fragment") else "agree.html"
        return self.page(request, name, agreement=result)

    def report(self, request: Request) -> Response:
        """The report, or (202) a page saying it is being built that asks again until it is."""
        params = {k: request.query_params.get(k) or None for k in ("human", "judge", "contrast")}
        built = self.reports.get(**params)
        if built is None:
            return self.page(request, "report_building.html", 202)
        if built.error:
            return self.error(request, built.error, built.status)
        return self.page(request, "report_page.html", built=built)

    def live_progress(self, request: Request) -> Response:
        """The running job's counters and, while one runs (or when ``?answers=1`` asks, as the
        browse page does once after a run), the answers table's row count."""
        models = self.gate.live_progress()
        body: dict[str, Any] = {"models": models}
        if models is not None or request.query_params.get("answers") == "1":
            with self.gate.reading() as store:
                body["answers"] = _answer_rows(store)
        return JSONResponse(body)

    # -- actions (JSON in, JSON out) --------------------------------------------------------------

    async def label_action(self, request: Request) -> Response:
        body = await _json(request)
        action = request.path_params["action"]

        def act() -> Any:
            rater = _writer(request, body)
            if action == "undo":
                return self.desk.undo(rater)
            if action == "skip":
                return self.desk.skip(rater, _text(body, "cell"))
            return self.desk.label(rater, _text(body, "cell"), _text(body, "label"), body.get("note"))

        return await _answer(act, action in ("label", "skip", "undo"))

    async def adjudicate_action(self, request: Request) -> Response:
        body = await _json(request)
        action = request.path_params["action"]
        actions: dict[str, Callable[[], Any]] = {
            "undo": self.adjudication.undo,
            "skip": lambda: self.adjudication.skip(_text(body, "cell")),
            "label": lambda: self.adjudication.label(_text(body, "cell"), _text(body, "label"),
                                                     body.get("note")),
        }
        return await _answer(actions.get(action, lambda: None), action in actions)

    async def settle_agreed(self, request: Request) -> Response:
        written = await run_in_threadpool(self.adjudication.settle_agreed)
        return JSONResponse({"written": written})

    async def cell_label(self, request: Request) -> Response:
        body = await _json(request)

        def write() -> dict[str, Any]:
            rater = rater_name(str(body.get("rater", "")))
            if self.options.raters and rater not in self.options.raters:
                raise NotYours(f"{rater} is not one of this study's raters "
                               f"({', '.join(self.options.raters)})")
            key = (_text(body, "item"), _text(body, "model"))
            row = label_row(key, rater, _text(body, "label"), "view:cell", note=body.get("note"))
            with self.gate.lock:
                self._refuse_unanswered(key)
                self.gate.append_labels([row])
            return {"said": f"Saved {rater}'s label"}

        return JSONResponse(await run_in_threadpool(write))


    def _refuse_unanswered(self, key: tuple[str, str]) -> None:
        """A label needs an answer to judge: none for a cell the store has no answer for."""
        with self.gate.reading() as store:
            answered = cell_content(store, *key) is not None
        if not answered:
            raise UserError("no such cell: the store has no answer for that item and model")


def _answer_rows(store: Any) -> int:
    return store_version(store, ("answers",))[0]  # append-only: more rows, new answers


def _report_stylesheet(name: str) -> Route:
    """``/NAME``: the report's stylesheet ``report/templates/NAME``, read once."""
    css = (report_html.TEMPLATES / name).read_text(encoding="utf-8")

    async def stylesheet(request: Request) -> Response:
        return Response(css, media_type="text/css")
    return Route(f"/{name}", stylesheet)


async def _json(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        body = None
    return body if isinstance(body, dict) else {}


def _writer(request: Request, body: dict[str, Any]) -> str:
    """The rater a label is written as: a rater's own link's, whatever the body says (a body
    naming someone else is refused), or the body's rater under the owner's token."""
    own = request.state.rater
    named = body.get("rater")
    if own is not None and named not in (None, "", own, own.removeprefix("human:")):
        raise NotYours(f"this link labels as {own} only")
    return own or rater_name(str(named or ""))


def _text(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise UserError(f"missing {name}")
    return value


async def _answer(act: Callable[[], Any], known: bool) -> Response:
    """Run a desk action; its screen as JSON, a stale page's cell as a 409 {"error", "stale"}."""
    if not known:
        return JSONResponse({"error": "no such action"}, status_code=404)
    try:
        return JSONResponse(screen_json(await run_in_threadpool(act)))
    except StaleCell as exc:  # other refusals go to View.refused
        return JSONResponse({"error": str(exc), "stale": True}, status_code=409)
