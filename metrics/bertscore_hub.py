"""Where BERTScore's model comes from, decided in seconds: a local directory, the local hub cache,
or the hub itself, and a one-line refusal naming the offline encoder where none of them answers.

Without this, an offline machine spends a minute in the hub client's retries before failing. Here:
a directory or a cached snapshot is used as a directory (no network at all); otherwise, with
``HF_HUB_OFFLINE`` set the answer is no at once, and without it one request with a short timeout
asks the hub (``HF_ENDPOINT``) whether the model exists before anything is downloaded.
"""

from __future__ import annotations

from pathlib import Path

from contam.harness.errors import UserError

__all__ = ["EncoderUnavailable", "locate_model", "PROBE_TIMEOUT_S"]

PROBE_TIMEOUT_S = 3.0


class EncoderUnavailable(UserError):
    """The BERTScore model cannot be had here (offline, not cached, or not on the hub)."""


def locate_model(model_type: str, offline_hint: str) -> str:
    """A directory holding ``model_type``, or the hub name when the hub answers for it.
    ``offline_hint`` ends the refusal: how to score without the network."""
    if Path(model_type).is_dir():
        return model_type
    cached = _cached_snapshot(model_type)
    if cached is not None:
        return cached
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        raise EncoderUnavailable(f"BERTScore model {model_type} is not in the local Hugging Face "
                                 f"cache and HF_HUB_OFFLINE is set; {offline_hint}")
    _probe_hub(model_type, constants.ENDPOINT, offline_hint)
    return model_type


def _cached_snapshot(model_type: str) -> str | None:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return snapshot_download(model_type, local_files_only=True)
    except (LocalEntryNotFoundError, ValueError, OSError):
        return None


def _probe_hub(model_type: str, endpoint: str, offline_hint: str) -> None:
    """One short request: does the hub answer, and does it know this model?"""
    import httpx

    url = f"{endpoint.rstrip('/')}/api/models/{model_type}"
    try:
        status = httpx.head(url, timeout=PROBE_TIMEOUT_S, follow_redirects=True).status_code
    except httpx.HTTPError as exc:
        raise EncoderUnavailable(
            f"BERTScore model {model_type} is not cached and the Hugging Face hub ({endpoint}) "
            f"did not answer within {PROBE_TIMEOUT_S:g} s ({type(exc).__name__}); "
            f"{offline_hint}") from exc
    if status >= 400:
        raise EncoderUnavailable(f"BERTScore model {model_type}: the Hugging Face hub answered "
                                 f"HTTP {status} for it; {offline_hint}")
