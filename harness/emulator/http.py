"""The emulator's HTTP/1.1 server: asyncio streams and h11, keep-alive, one task per connection.

h11 parses and frames; the application behind it (:mod:`contam.harness.emulator.server`) decides every
answer, or to reset or hang the connection instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import socket
import struct
import time
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlsplit

import h11
import orjson

from contam.harness.emulator.apis import Canned
from contam.harness.emulator.settings import HANG, RESET, EmulatorSettings, RecordedRequest

__all__ = ["HTTPServer", "Unparseable"]


class _Application(Protocol):
    settings: EmulatorSettings

    async def respond(self, incoming: RecordedRequest) -> Canned | str: ...


class _UnparseableType:
    """Marks a body that was sent but is not JSON (None means no body at all)."""

    def __repr__(self) -> str:
        return "<unparseable body>"


Unparseable = _UnparseableType()


def _incoming(request: h11.Request, body: bytes,
              client: tuple[str, int] | None) -> RecordedRequest:
    target = urlsplit(request.target.decode("latin-1"))
    headers: dict[str, str] = {}
    for name, value in request.headers:
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return RecordedRequest(request.method.decode("ascii"), target.path,
                           dict(parse_qsl(target.query)), headers, _parse_body(body), body, client,
                           time.time())


def _parse_body(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return Unparseable


async def _read_request(conn: h11.Connection, reader: asyncio.StreamReader,
                        client: tuple[str, int] | None) -> RecordedRequest | None:
    """The next complete request on this connection, or None when the client closed it."""
    request, chunks = None, []
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await reader.read(65536))
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            chunks.append(event.data)
        elif isinstance(event, h11.EndOfMessage):
            return _incoming(request, b"".join(chunks), client)
        else:  # ConnectionClosed, or PAUSED after a client's Connection: close
            return None


def _encode(conn: h11.Connection, canned: Canned) -> bytes:
    headers = [("content-type", canned.content_type), ("content-length", str(len(canned.body))),
               ("server", "contam-emulator"), *canned.headers]
    try:
        reason = http.HTTPStatus(canned.status).phrase.encode()
    except ValueError:  # 529 is Anthropic's own
        reason = b"Overloaded" if canned.status == 529 else b""
    out = conn.send(h11.Response(status_code=canned.status, headers=headers, reason=reason))
    if canned.body:
        out += conn.send(h11.Data(data=canned.body))
    return out + conn.send(h11.EndOfMessage())


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (SO_LINGER 0) instead of a polite FIN: a real connection reset."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def _hang(reader: asyncio.StreamReader, seconds: float) -> None:
    """Hold the connection without answering until the client gives up (EOF) or time runs out."""
    with contextlib.suppress(TimeoutError, ConnectionError):
        await asyncio.wait_for(reader.read(), timeout=seconds)


class HTTPServer:
    """asyncio streams + h11: HTTP/1.1 with keep-alive, one task per connection."""

    def __init__(self, app: _Application) -> None:
        self.app = app
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._connection, host, port, backlog=2048)
        return self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        try:
            await self._serve(h11.Connection(h11.SERVER), reader, writer)
        except (ConnectionError, h11.RemoteProtocolError, h11.LocalProtocolError):
            pass  # the client went away or spoke broken HTTP: nothing left to answer
        except asyncio.CancelledError:
            # Only close() cancels these tasks. Ending normally rather than re-raising keeps
            # Python 3.11's stream callback from logging a CancelledError per open connection.
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _serve(self, conn: h11.Connection, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        client = (str(peer[0]), int(peer[1])) if peer else None
        while (incoming := await _read_request(conn, reader, client)) is not None:
            outcome = await self.app.respond(incoming)
            if outcome == RESET:
                return _reset(writer)
            if outcome == HANG:
                return await _hang(reader, self.app.settings.hang_s)
            writer.write(_encode(conn, outcome))
            await writer.drain()
            if self.app.settings.on_sent is not None:
                self.app.settings.on_sent(incoming, outcome)
            if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()
