"""Every API dialect the emulator speaks, by name (the ``Call.api`` of its requests)."""

from __future__ import annotations

from contam.harness.emulator.apis import Dialect, GeminiDialect, OpenAIDialect
from contam.harness.emulator.apis_single import AnthropicDialect, OllamaDialect

__all__ = ["DIALECTS"]

DIALECTS: dict[str, Dialect] = {d.name: d for d in (OpenAIDialect(), GeminiDialect(),
                                                     AnthropicDialect(), OllamaDialect())}
