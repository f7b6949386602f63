"""What the rest of contam asks of each provider, declared here beside the providers: whether it
speaks HTTP (the bench and the emulator serve only those), the request field that asks for several
completions at once, and the routes a server answers its questions on (the emulator's table, the
base URL a model pointed at a server needs). A batch API's traits sit on its ``BatchProtocol``
(``tags_jobs``). Plain data: reading it imports no provider module (``local`` would pull in torch).
"""

from __future__ import annotations

from dataclasses import dataclass

from contam.harness.provider_names import PROVIDERS

__all__ = ["Route", "Traits", "TRAITS", "HTTP_PROVIDERS", "traits_of", "route_of"]


@dataclass(frozen=True)
class Route:
    """A server endpoint: ``POST /v1/chat/completions`` is ``Route("POST", "/v1/chat/completions")``;
    a model named in the path (Gemini) is the part between ``path`` (a prefix) and ``suffix``."""

    method: str
    path: str
    endpoint: str = "generate"  # what the emulator does there: generate, completions, show
    suffix: str | None = None  # set: the model's id sits between path and suffix

    def matches(self, method: str, path: str) -> bool:
        if method != self.method:
            return False
        if self.suffix is None:
            return path == self.path
        return path.startswith(self.path) and path.endswith(self.suffix)

    def model(self, path: str) -> str | None:
        """The model a matching path names (None: this route names none)."""
        return None if self.suffix is None else path[len(self.path):-len(self.suffix)]


@dataclass(frozen=True)
class Traits:
    """One provider's answers to what the engine, the probes, the bench and the emulator ask."""

    http: bool = True  # a wire protocol (local runs in this process: nothing to emulate or bench)
    samples_field: str | None = None  # the request field asking for N completions in one call
    base_path: str = ""  # what follows a server's root in a model's base_url
    routes: tuple[Route, ...] = ()


TRAITS: dict[str, Traits] = {
    "openai": Traits(samples_field="n", base_path="/v1", routes=(
        Route("POST", "/v1/chat/completions"),
        Route("POST", "/v1/completions", "completions"),  # vLLM's: prompt log-probabilities
    )),
    "gemini": Traits(samples_field="candidateCount", routes=(
        Route("POST", "/v1beta/models/", suffix=":generateContent"),
        Route("POST", "/v1/models/", suffix=":generateContent"),
    )),
    "anthropic": Traits(routes=(Route("POST", "/v1/messages"),)),
    "ollama": Traits(routes=(Route("POST", "/api/generate"), Route("POST", "/api/show", "show"))),
    "local": Traits(http=False),
}

# The providers the bench and the emulator speak, in the one list's order.
HTTP_PROVIDERS = tuple(name for name in PROVIDERS if TRAITS[name].http)


def traits_of(provider: str) -> Traits:
    return TRAITS[provider]


def route_of(method: str, path: str) -> tuple[str, str, str | None] | None:
    """(endpoint, provider, model in the path) for a request some provider's route answers."""
    for provider in HTTP_PROVIDERS:
        for route in TRAITS[provider].routes:
            if route.matches(method, path):
                return route.endpoint, provider, route.model(path)
    return None
