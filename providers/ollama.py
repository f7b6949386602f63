"""Ollama's native ``POST {host}/api/generate`` with ``stream: false``.

The system prompt is the ``system`` field (it overrides the Modelfile's), the question the
``prompt``; no ``context`` is ever sent, so nothing of an earlier call leaks in (R1). Sampling
``params`` go into ``options`` (``temperature``, ``seed``, ``num_predict``, ``num_ctx`` ...), except
the request-level ``keep_alive``, ``think`` and ``format``; a probe's ``temperature`` wins over the
config's (there is no multi-sample field: a probe sends one request per completion). A key is optional: ``OLLAMA_API_KEY`` (or
the config's ``api_key_env``) is sent as a Bearer token for ollama.com and authenticated proxies.

Ollama echoes the requested tag, and cloud-proxied tags carry a ``-cloud`` suffix, so served and
requested ids are both compared after :func:`normalise_model_id` (see ``served_model_id``).
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from contam.providers.base import (
    Fatal, ModelSettings, ProviderError, Reply, Request, Transient, Unreachable, resolve_api_key,
)
from contam.providers.hints import seconds_from_retry_after
from contam.providers.transport import HTTPProvider, answer_text, decode_json, error_for_status, send

__all__ = ["OllamaProvider", "normalise_model_id", "DEFAULT_KEY_ENV"]

DEFAULT_KEY_ENV = "OLLAMA_API_KEY"
_TOP_LEVEL_PARAMS = {"keep_alive", "think", "format"}
_PREFLIGHT_TIMEOUT_S = 10.0
# Ollama Cloud answers 429 "you (...) have reached your session/hourly/weekly usage limit,
# upgrade for higher limits": a budget, not a burst; retrying within minutes cannot help.
_QUOTA_PHRASE = "usage limit"
# Ollama's 404 for a tag it lacks: `model 'x' not found` (older servers add ", try pulling it
# first").
_NO_SUCH_MODEL = re.compile(r"\bmodel\b.*\bnot found\b", re.IGNORECASE)


def normalise_model_id(model: str | None) -> str | None:
    """``llama3.2:latest`` -> ``llama3.2``; ``gpt-oss:120b-cloud`` -> ``gpt-oss:120b``."""
    if model is None:
        return None
    return model.removesuffix(":latest").removesuffix("-cloud")


def _is_cloud_tag(model: str) -> bool:
    return model.endswith("-cloud") or model.endswith(":cloud")


class OllamaProvider(HTTPProvider):
    """One ``generate`` = one non-streaming /api/generate call."""

    default_base_url = "http://localhost:11434"
    key_env = DEFAULT_KEY_ENV
    key_required = False
    reserved_params = frozenset({"model", "prompt", "system", "stream", "context", "images",
                                 "suffix", "options"})

    @classmethod
    def resolve_key(cls, spec: ModelSettings) -> str | None:
        # Named in the config: the user expects it to be set. Else OLLAMA_API_KEY if set (a
        # local server needs no key).
        return resolve_api_key(spec, cls.key_env, required=bool(spec.api_key_env))

    def served_model_id(self) -> str:
        return normalise_model_id(self.spec.model) or self.spec.model

    def endpoint(self) -> str:
        return f"{self.base_url}/api/generate"

    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def payload(self, request: Request) -> dict[str, Any]:
        params = self.spec.params
        options = {k: v for k, v in params.items() if k not in _TOP_LEVEL_PARAMS}
        if request.max_output_tokens and "num_predict" not in options:
            options["num_predict"] = request.max_output_tokens
        if request.temperature is not None:
            options["temperature"] = request.temperature
        body: dict[str, Any] = {"model": self.spec.model, "prompt": request.user,
                                "system": request.system, "stream": False}
        if options:
            body["options"] = options
        body.update({k: v for k, v in params.items() if k in _TOP_LEVEL_PARAMS})
        return body

    def reply_from(self, body: Any) -> Reply:
        return Reply(text=answer_text(body["response"], "response"), served_model=normalise_model_id(body.get("model")),
                     finish_reason=body.get("done_reason"),
                     input_tokens=body.get("prompt_eval_count"),
                     output_tokens=body.get("eval_count"))

    def error_from(self, response: httpx.Response) -> ProviderError:
        body = self.error_body(response)
        detail = str(body.get("error") if isinstance(body, dict) else body or "")
        quota = response.status_code == 429 and _QUOTA_PHRASE in detail.lower()
        return error_for_status(response.status_code, detail, label=self.label,
                                retry_after_s=seconds_from_retry_after(response.headers.get("retry-after")),
                                quota=quota)

    async def preflight(self) -> str:
        """Is the server up (the connection check every HTTP provider makes, with Ollama's
        advice), does it know the tag, and does the tag run here or in the cloud?"""
        try:
            await super().preflight()
        except Transient as exc:
            raise Unreachable(f"{exc}; the Ollama server is not reachable: start it with "
                              "`ollama serve` or fix base_url") from exc
        version = (await self._ask("GET", "/api/version")).get("version", "unknown version")
        where = await self._where_model_runs()
        return f"Ollama {version} at {self.base_url}: {self.spec.model} {where}"

    async def _where_model_runs(self) -> str:
        response = await self._send("POST", "/api/show", {"model": self.spec.model})
        if response.status_code == 404 and self._says_no_such_model(response):
            raise Fatal(f"{self.label}: the Ollama server at {self.base_url} has no model "
                        f"{self.spec.model!r}; pull it first (ollama pull {self.spec.model})",
                        http_status=404)
        if response.status_code in (401, 403):
            raise self.error_from(response)
        if not response.is_success:
            return f"(could not inspect it: HTTP {response.status_code})"
        info = decode_json(response, self.label)
        remote = info.get("remote_host") if isinstance(info, dict) else None
        emulated = isinstance(info, dict) and info.get("emulated") is True  # contam emulator
        if emulated and (remote or _is_cloud_tag(self.spec.model)):
            return (f"is a cloud tag emulated by contam emulator: it answers itself, "
                    f"nothing reaches {remote or 'Ollama Cloud'}")
        if remote or _is_cloud_tag(self.spec.model):
            return f"is proxied to {remote or 'Ollama Cloud'} (runs remotely, not on this machine)"
        return "resolves locally (runs on the Ollama server's own hardware)"

    def _says_no_such_model(self, response: httpx.Response) -> bool:
        """Ollama's own 404, ``{"error": "model 'x' not found"}``; a proxy or a compatible server
        without /api/show sends another 404 (the lane then goes on, and /api/generate decides)."""
        body = self.error_body(response)
        message = body.get("error") if isinstance(body, dict) else None
        return isinstance(message, str) and bool(_NO_SUCH_MODEL.search(message))

    async def _ask(self, method: str, path: str) -> dict[str, Any]:
        response = await self._send(method, path)
        if not response.is_success:
            raise Fatal(f"{self.label}: {self.base_url}{path} answered HTTP "
                        f"{response.status_code}; is this an Ollama server?",
                        http_status=response.status_code)
        body = decode_json(response, self.label)
        return body if isinstance(body, dict) else {}

    async def _send(self, method: str, path: str, payload: Any = None) -> httpx.Response:
        """A preflight request; an unreachable server is fatal here, not worth retries."""
        try:
            return await send(self.client, method, f"{self.base_url}{path}", label=self.label,
                              timeout=min(self.spec.timeout_s, _PREFLIGHT_TIMEOUT_S),
                              headers=self.headers(), payload=payload)
        except Transient as exc:
            cause = exc.__cause__ or exc
            raise Fatal(f"{self.label}: the Ollama server at {self.base_url} is not reachable "
                        f"({type(cause).__name__}: {cause}); start it with `ollama serve` or "
                        "fix base_url") from exc
