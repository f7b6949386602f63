"""The store host: while a long job (run, judge, score, probe) holds a store for writing, its
process serves the store's reads, label appends and the job's live progress to other local
processes (``contam sql``, ``contam report``, ``contam view``; :mod:`contam.harness.store.access` is
the client side).

A Starlette app, served by uvicorn on a thread of its own over a Unix socket beside the store
(mode 0600; in a private temporary folder when that path is too long for a socket). Every request
must carry the token of the discovery file (:mod:`contam.harness.store.discovery`), written once the
host is up and removed when it stops. A read runs on a DuckDB cursor of its own (it sees what the
job has committed) on one of :data:`_READERS` threads of Linux's idle scheduling class, with
DuckDB on one thread meanwhile, so it takes only the CPU the job leaves (ARCHITECTURE.md, The
store host); progress and label appends run on niced threads of their own.

A read is interrupted when it runs past :data:`READ_LIMIT_S` or its client disconnects, and a
result past :data:`MAX_ROWS` rows or :data:`MAX_BYTES` bytes is refused while it is fetched.
Reads obey `contam sql`'s rule (:mod:`contam.harness.store.readonly`): one read-only statement, in a
``READ ONLY`` transaction, with the database's file and network access switched off when the
host starts. A job starts its host once it needs no file access from DuckDB itself.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import duckdb

from contam.harness.errors import UserError
from contam.harness.store.discovery import Holder, publish, withdraw
from contam.harness.store.labels import append_label_rows
from contam.harness.store.memory import serving_read
from contam.harness.store.readonly import (READ_ONLY_BEGIN, check_query, close_external_access,
                                    refuse_side_effects)
from contam.harness.store.store import Store
from contam.harness.store.wire import encode_json, encode_result, decode_json

__all__ = ["StoreHost", "ProgressRows", "socket_beside"]

ProgressRows = Callable[[], list[dict[str, Any]]]  # reads the job's per-model counters, as live_progress
_READERS = 2  # reads worked on at once (on idle-class threads); more wait: bench_reads.py part 3
_CALLS = 2  # progress and label requests worked on at once
_MAX_SOCKET_PATH = 100  # bytes; AF_UNIX allows 104-108 depending on the system
_START_TIMEOUT_S = 10.0
_READER_NICE = 10
READ_LIMIT_S = 120.0  # a read through a running job is interrupted after this long
MAX_ROWS = 2_000_000  # and a result past these is refused (wire.ResultTooLarge)
MAX_BYTES = 128 << 20
KEEP_ALIVE_S = 5.0  # an idle reader's connection is closed after this long (uvicorn's default)
_CLIENT_POLL_S = 0.25  # how often a read's handler looks whether its client is still there


class StoreHost:
    """``with StoreHost(store, command="run", progress=board.rows): ...`` serves ``store``."""

    def __init__(self, store: Store, *, command: str, progress: ProgressRows | None = None) -> None:
        self.store = store
        self.command = command
        self.progress = progress or (lambda: [])
        self.holder: Holder | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._base: duckdb.DuckDBPyConnection | None = None  # the cursor request cursors come from
        self._settings: duckdb.DuckDBPyConnection | None = None  # the host loop's, for SET threads
        self._lock = threading.Lock()
        self._active: set[duckdb.DuckDBPyConnection] = set()
        self._closing = False
        self._socket: str | None = None
        self._socket_dir: str | None = None
        self._limiter: Any = None  # of the progress and label requests
        self._readers: ThreadPoolExecutor | None = None  # the reads' idle-class threads

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> "StoreHost":
        try:
            close_external_access(self.store.con)
            self._base = self.store.con.cursor()
            self._settings = self._base.cursor()
            self._readers = ThreadPoolExecutor(_READERS, thread_name_prefix="contam-store-reader",
                                               initializer=_idle_class)
            sock = self._bind()
            self.holder = Holder(pid=os.getpid(), command=self.command, socket=self._socket)
            self._serve(sock)
            self._wait_started()
            publish(self.store.path, self.holder)
        except BaseException:
            self.stop()
            raise
        return self

    def _serve(self, sock: socket.socket) -> None:
        """uvicorn on a thread of its own: no signal handlers, no logging set-up, no access log."""
        import uvicorn

        config = uvicorn.Config(self._app(), log_config=None, log_level="warning",
                                access_log=False, lifespan="off", server_header=False,
                                timeout_graceful_shutdown=2, timeout_keep_alive=KEEP_ALIVE_S)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name="contam-store-host", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Withdraw the discovery file, cancel the reads under way, end the server."""
        if self.holder is not None:
            withdraw(self.store.path, self.holder)
        with self._lock:
            self._closing = True
            for cursor in self._active:
                cursor.interrupt()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._readers is not None:
            self._readers.shutdown(wait=False, cancel_futures=True)
        for cursor in (self._settings, self._base):
            if cursor is not None:
                cursor.close()
        self._remove_socket()

    def __enter__(self) -> "StoreHost":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wait_started(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the store host did not start")
            time.sleep(0.01)

    def _bind(self) -> socket.socket:
        """A listening-to-be Unix socket only this user can connect to."""
        path = socket_beside(self.store.path)
        if len(os.fsencode(path)) > _MAX_SOCKET_PATH or _taken(path):
            self._socket_dir = tempfile.mkdtemp(prefix="contam-host-")
            path = os.path.join(self._socket_dir, "store.sock")
        Path(path).unlink(missing_ok=True)  # a killed holder's: this process holds the store now
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        mask = os.umask(0o177)  # born 0600: a chmod after bind could follow a planted link
        try:
            sock.bind(path)
        finally:
            os.umask(mask)
        self._socket = path
        return sock

    def _remove_socket(self) -> None:
        if self._socket is not None:
            Path(self._socket).unlink(missing_ok=True)
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)

    # -- the app ------------------------------------------------------------------------------

    def _app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.middleware import Middleware
        from starlette.routing import Route

        routes = [Route("/health", self._health), Route("/progress", self._progress),
                  Route("/query", self._query, methods=["POST"]),
                  Route("/labels", self._labels, methods=["POST"])]
        return Starlette(routes=routes, middleware=[Middleware(_TokenRequired, host=self)])

    async def _health(self, request: Any) -> Any:
        return _json({"pid": os.getpid(), "command": self.command})

    async def _progress(self, request: Any) -> Any:
        return await self._in_worker(lambda: encode_json({"progress": self.progress()}))

    async def _query(self, request: Any) -> Any:
        body = await request.body()
        watch = _Watch()

        def read() -> bytes:
            asked = decode_json(body)
            return self._read(asked["sql"], asked.get("params"), watch)
        async with anyio.create_task_group() as group:
            group.start_soon(_interrupt_when_gone, request, watch)
            with self._one_thread(), serving_read(self.store):  # no bound on DuckDB meanwhile
                response = await self._in_worker(read, readers=True)
            group.cancel_scope.cancel()
        return response

    @contextmanager
    def _one_thread(self) -> Iterator[None]:
        """DuckDB on one thread while a read runs (Store.single_threaded), said on this, the
        host's loop thread, at normal priority: DuckDB starts its workers again from the thread
        that lets go, and from a reader's they would inherit its idle class."""
        self.store.single_threaded(True, self._settings)
        try:
            yield
        finally:
            with suppress(duckdb.Error):  # stop() closed the cursor: the store is closing
                self.store.single_threaded(False, self._settings)

    async def _labels(self, request: Any) -> Any:
        body = await request.body()

        def append() -> bytes:
            asked = decode_json(body)
            return encode_json({"appended": self._append(asked["rows"], asked.get("table", "labels"))})
        return await self._in_worker(append)

    async def _in_worker(self, work: Callable[[], bytes], *, readers: bool = False) -> Any:
        """``work`` in a worker thread (a reader's, ``readers``); a refusal or a DuckDB error as
        a 400 naming its kind."""
        try:
            return _body(await (self._on_reader(work) if readers else self._on_caller(work)))
        except _Finishing as exc:  # the reader is to try again on the store itself
            return _json({"error": str(exc), "kind": "UserError"}, status=503)
        except UserError as exc:
            return _json({"error": str(exc), "kind": "UserError"}, status=400)
        except (ValueError, KeyError, TypeError) as exc:  # not a request of contam.harness.store.client
            return _json({"error": f"malformed request ({type(exc).__name__})",
                          "kind": "UserError"}, status=400)
        except duckdb.Error as exc:
            if self._closing:  # interrupted by stop()
                return _json({"error": _FINISHING, "kind": "UserError"}, status=503)
            return _json({"error": str(exc), "kind": type(exc).__name__}, status=400)

    async def _on_reader(self, work: Callable[[], bytes]) -> bytes:
        """``work`` on an idle-class reader thread, waited for to its end as anyio's threads are
        (a read that must stop is interrupted instead: _Watch, stop())."""
        try:
            future = self._readers.submit(work)
        except RuntimeError:  # shut down: stop() is under way
            raise _Finishing(_FINISHING) from None
        with anyio.CancelScope(shield=True):
            return await asyncio.wrap_future(future)

    async def _on_caller(self, work: Callable[[], bytes]) -> bytes:
        import anyio.to_thread

        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(_CALLS)
        return await anyio.to_thread.run_sync(_yielding(work), limiter=self._limiter)

    # -- the work, in worker threads ------------------------------------------------------------

    def _read(self, sql: str, params: Any, watch: "_Watch") -> bytes:
        """One checked read, interrupted when it runs past READ_LIMIT_S or its client goes."""
        with self._cursor() as cursor:
            cursor.execute(READ_ONLY_BEGIN)
            timer = threading.Timer(READ_LIMIT_S, watch.interrupt, ["time"])
            try:
                check_query(cursor, sql)
                refuse_side_effects(cursor, sql)
                watch.attach(cursor)
                timer.start()
                cursor.execute(sql, params)
                return encode_result(cursor, max_rows=MAX_ROWS, max_bytes=MAX_BYTES)
            except duckdb.Error:
                if watch.reason is not None:
                    raise UserError(_STOPPED[watch.reason]) from None
                raise
            finally:
                timer.cancel()
                with suppress(duckdb.Error):  # an interrupted cursor has nothing to roll back
                    cursor.execute("ROLLBACK")

    def _append(self, rows: list[dict[str, Any]], table: str) -> int:
        with self._cursor() as cursor:
            return append_label_rows(cursor, rows, table)

    @contextmanager
    def _cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._lock:
            if self._closing:
                raise _Finishing(_FINISHING)
            cursor = self._base.cursor()
            self._active.add(cursor)
        try:
            yield cursor
        finally:
            with self._lock:
                self._active.discard(cursor)
            cursor.close()


_FINISHING = "the process holding the store is finishing"
_STOPPED = {"time": f"refused: the query ran past the {READ_LIMIT_S:.0f} s a running job gives a "
                    "read; narrow it, or run it once the job has finished",
            "gone": "the reader went away; its query was stopped"}


class _Watch:
    """Stops one read's DuckDB cursor from another thread: its time limit's timer, or the
    handler that saw its client go."""

    def __init__(self) -> None:
        self.reason: str | None = None  # "time" | "gone"
        self._cursor: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()

    def attach(self, cursor: duckdb.DuckDBPyConnection) -> None:
        with self._lock:
            self._cursor = cursor
            if self.reason is not None:
                cursor.interrupt()

    def interrupt(self, reason: str) -> None:
        with self._lock:
            if self.reason is None:
                self.reason = reason
                if self._cursor is not None:
                    self._cursor.interrupt()


async def _interrupt_when_gone(request: Any, watch: _Watch) -> None:
    """A client that closed its connection (killed, or gave up) gets its query stopped: it
    would otherwise hold a reader slot and a core of the job to the end."""
    while not await request.is_disconnected():
        await anyio.sleep(_CLIENT_POLL_S)
    watch.interrupt("gone")


class _Finishing(UserError):
    pass


def _idle_class() -> None:
    """This thread into Linux's idle scheduling class: it runs only where no other thread of the
    job wants the core, and any of them that wakes takes the core back at once (a nice value
    only shares it out, a time slice at a time). Elsewhere, or where that is refused: niced."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # 0: this thread, on Linux
    except (AttributeError, OSError):
        _lower_nice()


def _lower_nice() -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _READER_NICE)
    except (AttributeError, OSError):  # not Linux, or not allowed: as it is
        pass


def _yielding(work: Callable[[], bytes]) -> Callable[[], bytes]:
    """``work`` on a worker thread that yields the CPU to the job's own threads: Linux gives
    each thread its own nice value, and the job's event loop must not wait for a reader."""
    def lowered() -> bytes:
        _lower_nice()
        return work()
    return lowered


def socket_beside(store: Path) -> str:
    return os.path.abspath(store) + ".sock"


def _taken(path: str) -> bool:
    """Something that is not a socket has the socket's name: left alone."""
    try:
        return not stat.S_ISSOCK(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


class _TokenRequired:
    """Refuses every request that does not carry the host's token (``Authorization: Bearer``)."""

    def __init__(self, app: Any, host: StoreHost) -> None:
        self.app, self.host = app, host

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._carries_token(scope):
            response = _json({"error": "refused: a request to the store host needs its token",
                              "kind": "UserError"}, status=401)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _carries_token(self, scope: Any) -> bool:
        expected = f"Bearer {self.host.holder.token}".encode() if self.host.holder else b""
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        return bool(expected) and secrets.compare_digest(given, expected)


def _json(value: Any, status: int = 200) -> Any:
    return _body(encode_json(value), status)


def _body(content: bytes, status: int = 200) -> Any:
    from starlette.responses import Response

    return Response(content, status_code=status, media_type="application/json")
