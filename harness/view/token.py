"""Who may do what: the owner's token opens every page; a rater's token opens only that rater's
label desk. Every request must carry one of them, and name a host this server serves.

The owner's token lives in a file beside the store (``<store>.view-token``, mode 0600), so a
restarted server keeps its links; ``--new-token`` replaces it. A rater's token is an HMAC of their
name under the owner's, so rotating the one rotates the others. The URL's ``?token=`` becomes an
HttpOnly, SameSite=Strict cookie (named after the port); a write (POST) must also carry the token
in the ``X-Contam-Token`` header, which another site cannot set, so no page elsewhere can make a
browser label on its user's behalf. The Host header is checked as DNS-rebinding defences do.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
import socket
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path

from starlette.datastructures import MutableHeaders
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from contam.harness.errors import UserError
from contam.harness.declare import flag_of
from contam.harness.jobs.options.view import ViewOptions
from contam.harness.store.files import stat_reason, write_private

__all__ = ["TokenGuard", "new_token", "stored_token", "rater_token", "served_hosts", "HEADER"]

HEADER = "x-contam-token"
_REFUSED = ("this server does not know that link: it has a new one (`contam view` printed it; "
            f"it changes only with {flag_of(ViewOptions, 'new_token')}) — open that")
_RATERS_ONLY = "this link opens only {rater}'s label desk"
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def new_token() -> str:
    return secrets.token_urlsafe(24)


def stored_token(store: Path, *, rotate: bool = False) -> str:
    """The owner's token kept beside ``store``: made (or, with ``rotate``, replaced) as a new 0600
    file that no planted link can redirect; refused in one line if it is not the user's own."""
    path = store.with_name(store.name + ".view-token")
    if rotate or not os.path.lexists(path):
        write_private(path, (new_token() + "\n").encode("ascii"))
    return _read_private(path)


def _read_private(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise UserError(f"{path}: cannot read the view's token ({exc.strerror}); "
                        f"{flag_of(ViewOptions, 'new_token')} makes a new one") from None
    with os.fdopen(fd, encoding="ascii", errors="replace") as handle:
        problem = stat_reason(os.fstat(handle.fileno()))
        if problem:
            raise UserError(f"{path}: {problem}: remove it, or run with {flag_of(ViewOptions, 'new_token')}")
        return handle.read().strip()


def rater_token(owner: str, rater: str) -> str:
    """``human:alice``'s own token: their name after an HMAC of it under the owner's token."""
    name = rater.removeprefix("human:")
    digest = hmac.new(owner.encode(), f"rater\x1f{name}".encode(), hashlib.sha256).hexdigest()
    return f"{digest[:32]}.{name}"


def _token_rater(owner: str, given: str) -> str | None:
    """The rater whose token ``given`` is, or None."""
    name = given.partition(".")[2]
    return f"human:{name}" if name and _same(given, rater_token(owner, name)) else None


def _same(given: str | None, token: str) -> bool:
    return given is not None and secrets.compare_digest(given.encode(), token.encode())


def served_hosts(host: str) -> frozenset[str] | None:
    """The Host names a server listening on ``host`` answers; None: any IP literal or this
    machine's own names (a server on every interface)."""
    if host in ("0.0.0.0", "::", ""):
        return None
    loopback = host == "localhost" or _is_ip(host) and ipaddress.ip_address(host).is_loopback
    return frozenset({host.lower()} | (_LOOPBACK if loopback else set()))


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class _Caller:
    token: str  # as presented
    rater: str | None  # None: the owner


class TokenGuard:
    """ASGI middleware in front of the whole app, static files included."""

    def __init__(self, app: ASGIApp, *, token: str, cookie: str,
                 hosts: frozenset[str] | None = frozenset(_LOOPBACK)) -> None:
        self.app, self.token, self.cookie, self.hosts = app, token, cookie, hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        refusal = self._refusal(conn)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        caller = self._caller(conn)
        scope.setdefault("state", {})["rater"] = caller.rater
        from_query = conn.query_params.get("token") == caller.token
        await self.app(scope, receive, self._setting_cookie(send, caller.token) if from_query else send)

    def _refusal(self, conn: HTTPConnection) -> Response | None:
        if not self._host_served(conn.url.hostname or ""):
            return PlainTextResponse("400 Bad Request: this server does not serve that Host name\n",
                                     status_code=400)
        caller = self._caller(conn)
        if caller is None:
            return _forbidden(conn, _REFUSED)
        if caller.rater is not None and not _rater_may(conn, caller.rater):
            return _forbidden(conn, _RATERS_ONLY.format(rater=caller.rater))
        return None

    def _caller(self, conn: HTTPConnection) -> _Caller | None:
        """Who presented a token this server knows, through a channel allowed for the method."""
        given = [conn.headers.get(HEADER)]
        if conn.scope["method"] in ("GET", "HEAD"):  # a write needs the header, never the cookie
            given += [conn.query_params.get("token"), conn.cookies.get(self.cookie)]
        for token in filter(None, given):
            if _same(token, self.token):
                return _Caller(token, None)
            rater = _token_rater(self.token, token)
            if rater is not None:
                return _Caller(token, rater)
        return None

    def _host_served(self, hostname: str) -> bool:
        name = hostname.lower().strip("[]")
        if self.hosts is None:
            return _is_ip(name) or name in {"localhost", socket.gethostname().lower(),
                                            socket.getfqdn().lower()}
        return name in self.hosts

    def _setting_cookie(self, send: Send, token: str) -> Send:
        cookie = SimpleCookie()
        cookie[self.cookie] = token
        cookie[self.cookie].update({"httponly": True, "samesite": "Strict", "path": "/"})

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).append("set-cookie", cookie[self.cookie].OutputString())
            await send(message)

        return send_with_cookie


def _rater_may(conn: HTTPConnection, rater: str) -> bool:
    """A rater's link opens their label page, its actions and the static files: nothing else."""
    path, method = conn.url.path, conn.scope["method"]
    if path.startswith("/static/"):
        return True
    if path == "/label" and method in ("GET", "HEAD"):
        named = conn.query_params.get("rater", "").strip()
        return named in ("", rater, rater.removeprefix("human:"))
    return path.startswith("/api/label/") and method == "POST"


def _forbidden(conn: HTTPConnection, message: str) -> Response:
    if conn.url.path.startswith("/api/"):
        return JSONResponse({"error": message, "forbidden": True}, status_code=403)
    return PlainTextResponse(f"403 Forbidden: {message}.\n", status_code=403)
