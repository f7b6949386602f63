"""Can a server be reached at all? The quick check every HTTP provider makes before its lane starts.

A provider that is down otherwise takes a request's whole timeout and all its retries to say so
(34 s with the defaults). :func:`check_reachable` first refuses a ``base_url`` that no request
could go to (not http or https, no host, a port beyond 65535), then opens one TCP connection to
the server, or to the proxy the environment names for it, with a short timeout, and closes it
again. It sends nothing: no request, no header, so no key, to anyone.
"""

from __future__ import annotations

import urllib.parse
import urllib.request

import anyio
import httpx

from contam.providers.base import Fatal, Transient

__all__ = ["check_reachable", "url_problem", "environment_proxy", "CONNECT_CHECK_S"]

CONNECT_CHECK_S = 5.0  # the longest a connection check waits (DNS and TCP together)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_PROXY_PORTS = {**_DEFAULT_PORTS, "socks5": 1080, "socks5h": 1080}


def url_problem(url: str) -> str | None:
    """Why no request could be sent to ``url``, or None when one could."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # ValueError beyond 0-65535 or not a number
    except ValueError as exc:
        return f"is not a URL ({exc})"
    if parts.scheme not in _DEFAULT_PORTS:
        return "is not an http:// or https:// URL"
    if not parts.hostname:
        return "names no host"
    if port == 0:
        return "names port 0"
    return None


def environment_proxy(url: httpx.URL) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``ALL_PROXY``...), or None
    when there is none or ``NO_PROXY`` exempts its host."""
    proxies = urllib.request.getproxies()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if proxy is None or urllib.request.proxy_bypass(url.host):
        return None
    return proxy


async def check_reachable(url: str, *, label: str, timeout: float = CONNECT_CHECK_S) -> None:
    """Fatal when ``url`` is no usable URL; Transient when nothing accepts a TCP connection at its
    host and port (or its proxy's) within ``timeout`` seconds."""
    problem = url_problem(url)
    if problem:
        raise Fatal(f"{label}: base_url {url!r} {problem}")
    host, port = _destination(url)
    try:
        with anyio.fail_after(timeout):
            stream = await anyio.connect_tcp(host, port)
    except TimeoutError:
        raise Transient(f"{label}: {host}:{port} did not accept a connection within "
                        f"{timeout:g} s; is the server up? (base_url {url!r})") from None
    except OSError as exc:  # refused, unreachable, no such host
        raise Transient(f"{label}: cannot connect to {host}:{port} ({_reason(exc)}); is the "
                        f"server up? (base_url {url!r})") from exc
    await stream.aclose()


def _destination(url: str) -> tuple[str, int]:
    """Where the connection goes: the proxy for ``url``, if the environment names one, else the
    server itself."""
    proxy = environment_proxy(httpx.URL(url))
    parts = urllib.parse.urlsplit(proxy or url)
    return parts.hostname or "", parts.port or _PROXY_PORTS.get(parts.scheme, 80)


def _reason(exc: OSError) -> str:
    """What refused the connection, in words: anyio's "All connection attempts failed" carries the
    first attempt's error as its cause."""
    cause = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
    return f"{type(cause).__name__}: {cause.strerror or cause}"
