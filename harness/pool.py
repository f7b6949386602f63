"""The HTTP client of a lane: one httpx.AsyncClient whose connections are one small pool per worker.

Why not httpx's own pool sized to the concurrency: on every request and every response, httpcore
1.0's ``AsyncConnectionPool._assign_requests_to_connections`` walks every connection and, for each
idle one, every connection again. At 64 connections per lane that walk was ~60% of the harness's
CPU in a profile of 4 x 400 requests (about 2 ms per request, more than the rest of the harness).

So each worker of a lane owns a pool of its own holding one keep-alive connection, and the lane's
single client routes each request to the pool of the worker that sends it (a context variable the
worker sets once). Providers still receive one ``httpx.AsyncClient`` per lane, connections are
still reused, and at most ``concurrency`` are open, as before. Proxies from the environment keep
working: httpx mounts its own proxy transports in front of this one.
"""

from __future__ import annotations

import ssl
from contextvars import ContextVar

import httpx

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
    """``workers`` single-connection pools; a request goes to its worker's pool."""

    def __init__(self, workers: int) -> None:
        one = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        context = _shared_ssl_context()
        self._pools = [httpx.AsyncHTTPTransport(verify=context, limits=one)
                       for _ in range(max(1, workers))]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        pool = self._pools[_worker_slot.get() % len(self._pools)]
        return await pool.handle_async_request(request)

    async def aclose(self) -> None:
        for pool in self._pools:
            await pool.aclose()


def lane_client(workers: int, timeout_s: float) -> httpx.AsyncClient:
    """The client a lane's provider receives."""
    return httpx.AsyncClient(transport=WorkerPools(workers), timeout=timeout_s)
