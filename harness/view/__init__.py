"""`contam view`: the web app over the store — browse the cells, label them blind, measure and
settle agreement between raters, read the report. Starlette behind uvicorn; templates and
static files beside the code."""

from contam.harness.view.app import create_app, serve
from contam.harness.view.options import ViewOptions, view_options

__all__ = ["create_app", "serve", "ViewOptions", "view_options"]
