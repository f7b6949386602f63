"""Building the ASGI app (Starlette) and serving it (uvicorn): `contam view`'s entry point.

The server listens where it is told; a token is always required, on loopback and on any other
address alike. Once it is listening it prints the owner's URL on one line, then, with --raters,
each rater's own link (which opens only that rater's label desk).
"""

from __future__ import annotations

import errno
import socket
import time
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contam.harness.declare import flag_of
from contam.harness.errors import UserError
from contam.harness.store import access
from contam.harness.view.options import ViewOptions
from contam.harness.view.routes import View
from contam.harness.view.token import TokenGuard, rater_token, served_hosts, stored_token

__all__ = ["create_app", "serve", "PAGE_POLICY"]

PAGE_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
               "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


class ResponseHeaders:
    """No framing, no sniffing, no referrer, no caching of pages with data; a strict content
    policy unless the response brought its own (the report's). And ``Server-Timing``: how long
    the server took to the response's start (what scripts/bench_view.py reads)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.append("server-timing", f"app;dur={(time.perf_counter() - started) * 1000:.2f}")
                headers.setdefault("content-security-policy", PAGE_POLICY)
                headers.update({"x-content-type-options": "nosniff", "referrer-policy": "no-referrer",
                                "x-frame-options": "DENY", "cache-control": "no-store"})
            await send(message)

        await self.app(scope, receive, send_with_headers if scope["type"] == "http" else send)


def create_app(options: ViewOptions, token: str, port: int | None = None) -> ASGIApp:
    """The whole app: the token guard in front of the pages. ``port`` names the cookie."""
    view = View(options, token)
    app = Starlette(routes=view.routes(), exception_handlers={
        UserError: view.refused, HTTPException: view.http_error, Exception: view.failed})
    app.state.view = view
    cookie = f"contam_view_{port if port is not None else options.port}"
    guard = TokenGuard(app, token=token, cookie=cookie, hosts=served_hosts(options.host))
    return ResponseHeaders(guard)


def serve(options: ViewOptions, on_ready: Callable[[str], Any] = print, *,
          new_token: bool = False) -> None:
    """Check the store, listen, call ``on_ready`` with each URL, serve until interrupted. The
    owner's token is the store's own (kept beside it); ``new_token`` replaces it."""
    import uvicorn

    access.prepare(options.store)  # every migration applied before the first read (or no such store)
    token = stored_token(options.store, rotate=new_token)
    sock = _listen(options.host, options.port)
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(options, token, port), log_level="warning",
                            access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    base = f"http://{_url_host(options.host)}:{port}"
    on_ready(f"{base}/?token={token}")
    for rater in options.raters:
        on_ready(f"{rater}'s own link (the label desk only): "
                 f"{base}/label?token={rater_token(token, rater)}")
    server.run(sockets=[sock])


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it: a response's body is not held back until the client
    # acknowledges its headers (Nagle's algorithm against a delayed ACK: 40 ms a request).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port} ({exc.strerror or exc}){_busy(exc)}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _busy(exc: OSError) -> str:
    """What to do about a port that something (often another `contam view`) already has."""
    if exc.errno != errno.EADDRINUSE:
        return ""
    port = flag_of(ViewOptions, "port")
    return (f"; another program has that port (a second `contam view`?): choose one with {port} N, "
            f"or {port} 0 for any free one")


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
