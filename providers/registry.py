"""From a configured model to the provider object that speaks its wire protocol.

Provider modules are imported only when a model uses them, so a run of local models never
imports the HTTP providers' dependencies and vice versa (``local`` pulls in torch).
"""

from __future__ import annotations

import importlib

import httpx

from contam.harness.provider_names import PROVIDERS, class_prefix
from contam.providers.base import (
    BadKey, Fatal, MissingKey, ModelSettings, Provider, Reply, ServedModelMismatch,
    served_model_matches,
)

__all__ = ["create_provider", "provider_class", "missing_key", "served_model_id", "check_first_reply", "PROVIDER_CLASSES"]

# provider name -> (module, class), from the one list of names: providers/<name>.py holds exactly
# one provider class, <Name>Provider (tests/test_providers_ollama.py imports each).
PROVIDER_CLASSES: dict[str, tuple[str, str]] = {
    name: (f"contam.providers.{name}", f"{class_prefix(name)}Provider") for name in PROVIDERS}


def create_provider(spec: ModelSettings, client: httpx.AsyncClient | None) -> Provider:
    """The provider for ``spec``, built around the engine's client (``local`` ignores it).

    Construction already checks what can be checked offline: the key's environment variable
    (MissingKey) and params that would enable tools or rewrite the request (Fatal).
    """
    return provider_class(spec)(spec, client=client)


def provider_class(spec: ModelSettings) -> type[Provider]:
    """The class that speaks ``spec``'s protocol, imported on first use."""
    try:
        module_name, class_name = PROVIDER_CLASSES[spec.provider]
    except KeyError:
        raise Fatal(f"model {spec.name!r}: unknown provider {spec.provider!r} (one of "
                    f"{', '.join(PROVIDER_CLASSES)})") from None
    return getattr(importlib.import_module(module_name), class_name)


def missing_key(spec: ModelSettings) -> MissingKey | BadKey | None:
    """The key error ``spec`` would stop on (unset, or holding a character no header may carry),
    found before anything is sent; else None."""
    try:
        provider_class(spec).resolve_key(spec)
    except (MissingKey, BadKey) as exc:
        return exc
    return None


def served_model_id(provider: Provider) -> str:
    """The id a reply's ``served_model`` must match: the provider's normalised form of the
    requested id (Ollama strips ``-cloud`` and ``:latest``); ``spec.model`` by default."""
    return provider.served_model_id()


def check_first_reply(provider: Provider, reply: Reply) -> None:
    """The served-model check (ARCHITECTURE.md, Rules that hold everywhere), on every reply: raise ServedModelMismatch naming
    both ids unless the served id is the requested one (normalised the way the provider normalises
    served ids), or that id plus a dated suffix."""
    expected = served_model_id(provider)
    served = reply.served_model
    if served is None or not served_model_matches(expected, served):
        raise ServedModelMismatch(
            f"model {provider.spec.name!r}: asked for {provider.spec.model!r} but the server "
            f"answered as {served!r}")
