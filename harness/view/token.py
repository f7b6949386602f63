"""The access token: every request must carry it, or it is refused with 403 and no data.

The URL `contam view` prints carries it as ``?token=``; a response to such a request sets it as
an HttpOnly, SameSite=Strict cookie (named after the port, so two servers on one host do not
overwrite each other's), which later requests carry. A write (POST) must also carry it in the
``X-Contam-Token`` header, which another site cannot set: the cookie alone never authorises a
write, so no page elsewhere can make a browser label on its user's behalf.
"""

from __future__ import annotations

import secrets
from http.cookies import SimpleCookie

from starlette.datastructures import MutableHeaders
from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["TokenGuard", "new_token", "HEADER"]

HEADER = "x-contam-token"
_REFUSED = "403 Forbidden: open the URL that `contam view` printed (it carries the access token).\n"


def new_token() -> str:
    return secrets.token_urlsafe(24)


def _same(given: str | None, token: str) -> bool:
    return given is not None and secrets.compare_digest(given.encode(), token.encode())


class TokenGuard:
    """ASGI middleware in front of the whole app, static files included."""

    def __init__(self, app: ASGIApp, *, token: str, cookie: str) -> None:
        self.app, self.token, self.cookie = app, token, cookie

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        from_query = _same(conn.query_params.get("token"), self.token)
        allowed = from_query or _same(conn.cookies.get(self.cookie), self.token) or \
            _same(conn.headers.get(HEADER), self.token)
        if scope["method"] not in ("GET", "HEAD"):
            allowed = _same(conn.headers.get(HEADER), self.token)
        if not allowed:
            await PlainTextResponse(_REFUSED, status_code=403)(scope, receive, send)
            return
        await self.app(scope, receive, self._setting_cookie(send) if from_query else send)

    def _setting_cookie(self, send: Send) -> Send:
        cookie = SimpleCookie()
        cookie[self.cookie] = self.token
        cookie[self.cookie].update({"httponly": True, "samesite": "Strict", "path": "/"})

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).append("set-cookie", cookie[self.cookie].OutputString())
            await send(message)

        return send_with_cookie
