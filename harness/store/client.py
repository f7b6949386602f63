"""The client side of a store host (:mod:`contam.harness.store.host`): a reader with the read API of
:class:`~contam.harness.store.Store` whose every call is a request over the host's Unix socket.

A refusal comes back as the same UserError, and a DuckDB error as the same DuckDB exception
class with the same message, that the call would have raised on the store itself; a host that
stops answering is a one-line UserError.

The requests go by the standard library's HTTP client: a reader beside a running job starts in a
few milliseconds of CPU, where httpx's imports (its command line's rich and click, httpcore's
trio) took 0.3 s of a core, at normal priority, from the job a reader is meant to yield to
(scripts/bench_reads.py part 3).
"""

from __future__ import annotations

import http.client
import select
import socket
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from contam.harness.errors import UserError
from contam.harness.store.discovery import Holder, HostGone
from contam.harness.store.store import query_parameters
from contam.harness.store.frames import with_categories
from contam.harness.store.wire import decode_json, decode_result, encode_json, result_frame

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["HostReader", "HostGone", "connect"]

_CONNECT_TIMEOUT_S = 2.0
_READ_TIMEOUT_S = 600.0  # a report on a large store through the host takes a while


class HostReader:
    """The store at ``path`` read through the host of the process that holds it."""

    def __init__(self, path: str | Path, holder: Holder) -> None:
        self.path = Path(path)
        self.holder = holder
        # Plain HTTP over a Unix socket, one keep-alive connection: no TLS, no pool.
        self._http = _UnixConnection(holder.socket)
        self._headers = {"Authorization": f"Bearer {holder.token}"}

    # -- the read API of Store ----------------------------------------------------------------

    def query(self, sql: str, params: Iterable[Any] | None = None) -> list[tuple]:
        return decode_result(self._query(sql, params)).rows

    def query_dicts(self, sql: str, params: Iterable[Any] | None = None) -> list[dict[str, Any]]:
        return decode_result(self._query(sql, params)).dicts()

    def query_df(self, sql: str, params: Iterable[Any] | None = None,
                 categories: Sequence[str] = ()) -> "pd.DataFrame":
        return with_categories(result_frame(self._query(sql, params)), categories)

    def count(self, table: str) -> int:
        return self.query(f"SELECT count(*) FROM {table}")[0][0]

    def checked_query(self, query: str) -> tuple[list[str], list[tuple]]:
        """`contam sql`'s query: the host applies the same rule (:mod:`contam.harness.store.readonly`)."""
        result = decode_result(self._query(query, None))
        return result.columns, result.rows

    def checked_chunks(self, query: str) -> tuple[list[str], Iterator[list[tuple]]]:
        """:meth:`checked_query` as one chunk: the host sends a result whole (within its cap)."""
        columns, rows = self.checked_query(query)
        return columns, iter([rows] if rows else [])

    def interrupt(self) -> None:
        """Nothing to do here: the host stops a read whose client has gone (Ctrl-C exits)."""

    # -- beyond reading -----------------------------------------------------------------------

    def append_labels(self, rows: Sequence[Mapping[str, Any]], table: str = "labels") -> int:
        """``labels`` rows, or ``label_sessions`` rows (`contam view`'s raters' seeds)."""
        return decode_json(self._post("/labels", {"rows": list(rows), "table": table}))["appended"]

    def progress(self) -> list[dict[str, Any]]:
        return decode_json(self._request("GET", "/progress"))["progress"]

    def answers(self) -> bool:
        """Whether the host answers (with this token)."""
        try:
            self._request("GET", "/health")
        except UserError:
            return False
        return True

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "HostReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests -----------------------------------------------------------------------------

    def _query(self, sql: str, params: Iterable[Any] | None) -> bytes:
        # named ($name) parameters travel as an object, the rest as a list
        return self._post("/query", {"sql": sql, "params": query_parameters(params)})

    def _post(self, route: str, body: dict[str, Any]) -> bytes:
        return self._request("POST", route, content=encode_json(body))

    def _request(self, method: str, route: str, content: bytes | None = None) -> bytes:
        try:
            status, body = self._exchange(method, route, content)
        except (OSError, http.client.HTTPException) as exc:
            self._http.close()
            raise HostGone(f"{self.path}: the process holding it (pid {self.holder.pid}, "
                           f"contam {self.holder.command}) does not answer "
                           f"({type(exc).__name__})") from None
        if status == 503:
            raise HostGone(str(_error(status, body)))
        if status != 200:
            raise _error(status, body)
        return body

    def _exchange(self, method: str, route: str, content: bytes | None) -> tuple[int, bytes]:
        if self._http.closed_by_host():  # an idle keep-alive connection the host let go
            self._http.close()
        self._http.request(method, route, body=content, headers=self._headers)
        response = self._http.getresponse()
        return response.status, response.read()


class _UnixConnection(http.client.HTTPConnection):
    """The standard library's HTTP connection, over the host's Unix socket."""

    def __init__(self, path: str) -> None:
        super().__init__("store-host", timeout=_READ_TIMEOUT_S)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(_CONNECT_TIMEOUT_S)
        try:
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            raise
        sock.settimeout(self.timeout)
        self.sock = sock

    def closed_by_host(self) -> bool:
        """Whether the open, idle connection has been closed at the host's end (it reads as
        ready: the end of the stream)."""
        return self.sock is not None and bool(select.select([self.sock], [], [], 0)[0])


def connect(path: str | Path, holder: Holder) -> HostReader | None:
    """A reader through ``holder``'s host, or None when nothing answers there (a stale file)."""
    reader = HostReader(path, holder)
    if reader.answers():
        return reader
    reader.close()
    return None


def _error(status: int, body: bytes) -> Exception:
    """The exception the call would have raised on the store itself."""
    try:
        said = decode_json(body)
        message, kind = said["error"], said.get("kind", "")
    except (ValueError, KeyError, TypeError):
        return UserError(f"the store host answered {status}")
    error_class = getattr(duckdb, kind, None)
    if isinstance(error_class, type) and issubclass(error_class, duckdb.Error):
        return error_class(message)
    return UserError(message)
