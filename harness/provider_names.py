"""The provider names: the one list the config checks a model's ``provider`` against, and the one
providers/registry.py and providers/batch.py build their tables from (ARCHITECTURE.md, Where an
addition goes). Plain constants, so the config (below the providers' layer) can read them too.
"""

from __future__ import annotations

__all__ = ["PROVIDERS", "BATCH_PROVIDERS", "class_prefix"]

PROVIDERS = ("openai", "gemini", "anthropic", "ollama", "local")  # providers/<name>.py each
BATCH_PROVIDERS = ("openai", "anthropic", "gemini")  # those with a batch API: providers/<name>_batch.py

_SPELLED = {"openai": "OpenAI"}  # where a class name is not the provider name capitalised


def class_prefix(provider: str) -> str:
    """How the provider's class names begin: ``OpenAI`` (OpenAIProvider, OpenAIBatch), ``Gemini``."""
    return _SPELLED.get(provider, provider.capitalize())
