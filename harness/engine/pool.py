"""The HTTP client of a lane: one httpx.AsyncClient whose connections are one small pool per worker.

Why not httpx's own pool sized to the concurrency: httpcore's pool walks every connection for
each idle one on every request, O(connections x idle), which cost more than the rest of the harness.

So each worker of a lane owns a pool of its own holding one keep-alive connection, and the lane's
single client routes each request to the pool of the worker that sends it (a context variable the
worker sets once). Providers still receive one ``httpx.AsyncClient`` per lane (a
:class:`contam.providers.lean.LeanClient`, which sends straight through this transport), connections are
still reused, and at most ``concurrency`` are open, as before.

Proxies: httpx ignores ``HTTPS_PROXY`` and the like for a client given a transport of its own, so
this transport reads them itself: each request goes through the proxy the environment names for
its URL (``no_proxy`` honoured, as Python's ``urllib`` reads them), decided once per destination.
"""

from __future__ import annotations

import ssl
from contextvars import ContextVar

import httpx

from contam.providers.lean import LeanClient
from contam.providers.reach import environment_proxy

__all__ = ["WorkerPools", "lane_client", "set_worker_slot"]

_worker_slot: ContextVar[int] = ContextVar("contam_worker_slot", default=0)
_ssl_context: ssl.SSLContext | None = None


def set_worker_slot(slot: int) -> None:
    """Called once by each worker task: its requests use pool number ``slot``."""
    _worker_slot.set(slot)


def _shared_ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle takes ~20 ms; every pool of every lane shares one context.
    global _ssl_context
    if _ssl_context is None:
        _ssl_context = httpx.create_ssl_context()
    return _ssl_context


class WorkerPools(httpx.AsyncBaseTransport):
    """``workers`` single-connection pools (per proxy, where the environment names several); a
    request goes to its worker's pool."""

    def __init__(self, workers: int) -> None:
        self._workers = max(1, workers)
        self._pools: dict[tuple[int, str | None], httpx.AsyncHTTPTransport] = {}
        self._proxies: dict[tuple[str, str, int | None], str | None] = {}  # destination -> proxy

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        key = (_worker_slot.get() % self._workers, self._proxy_for(request.url))
        pool = self._pools.get(key) or self._new_pool(key)
        return await pool.handle_async_request(request)

    def _proxy_for(self, url: httpx.URL) -> str | None:
        destination = (url.scheme, url.host, url.port)
        if destination not in self._proxies:
            self._proxies[destination] = environment_proxy(url)
        return self._proxies[destination]

    def _new_pool(self, key: tuple[int, str | None]) -> httpx.AsyncHTTPTransport:
        one = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        pool = httpx.AsyncHTTPTransport(verify=_shared_ssl_context(), limits=one, proxy=key[1])
        self._pools[key] = pool
        return pool

    async def aclose(self) -> None:
        for pool in self._pools.values():
            await pool.aclose()


def lane_client(workers: int, timeout_s: float) -> LeanClient:
    """The client a lane's provider receives."""
    return LeanClient(transport=WorkerPools(workers), timeout=timeout_s)
