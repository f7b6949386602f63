"""The engine's HTTP client: an ``httpx.AsyncClient`` with a lean path for the providers' requests.

Why: httpx's client layer (auth flow, redirect loop, cookie jar, stream wrapper) costs as much CPU
per request as the rest of the harness, and none of it serves a provider's stateless POST (R1).

:meth:`LeanClient.exchange` therefore hands the request straight to the client's transport (the
engine's connection pools) and reads the reply whole: about a fifth less CPU per request than
``AsyncClient.request`` in ``contam bench --emulator``. Everything else is httpx's own: the
transport, its connection pools and TLS, its exceptions, its default headers, the ``Request`` and
``Response`` objects the providers read. Proxies are the transport's business, as they are for any
httpx client given a transport of its own (httpx then ignores ``HTTPS_PROXY`` and the like): the
engine's transport (:mod:`contam.harness.engine.pool`) reads them from the environment itself.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx

__all__ = ["LeanClient"]


class LeanClient(httpx.AsyncClient):
    """``LeanClient(transport=..., timeout=...)``: an AsyncClient whose :meth:`exchange` skips the
    client layer (see the module docstring). Every other method is httpx's."""

    def __init__(self, *, transport: httpx.AsyncBaseTransport, timeout: float) -> None:
        super().__init__(transport=transport, timeout=timeout)
        self._own_transport = transport
        self._timeouts: dict[float, dict[str, float]] = {}

    async def exchange(self, method: str, url: str, *, headers: Mapping[str, str],
                       content: bytes | None, timeout: float) -> httpx.Response:
        """One request, its reply read whole and its connection released; httpx's exceptions."""
        request = httpx.Request(method, url, headers=self._merged(headers), content=content,
                                extensions={"timeout": self._timeout_extension(timeout)})
        response = await self._own_transport.handle_async_request(request)
        response.request = request
        try:
            await response.aread()
        finally:
            await response.aclose()
        return response

    def _merged(self, headers: Mapping[str, str]) -> httpx.Headers:
        # The client's defaults (user-agent, accept-encoding...) under the request's own, as
        # AsyncClient.build_request merges them.
        merged = httpx.Headers(self.headers)
        merged.update(headers)
        return merged

    def _timeout_extension(self, seconds: float) -> dict[str, float]:
        if seconds not in self._timeouts:
            self._timeouts[seconds] = httpx.Timeout(seconds).as_dict()
        return self._timeouts[seconds]
