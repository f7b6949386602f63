"""``contam emulator``: the settings its flags make (with ``--items``, the knowledge of an items
file), the banner it prints, and serving in the foreground until a signal."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import Any

from contam.harness.declare import flag_of, options_from
from contam.harness.emulator.dialects import DIALECTS
from contam.harness.emulator.knowledge import Knowledge
from contam.harness.emulator.options import EmulatorOptions
from contam.harness.emulator.server import serve
from contam.harness.emulator.settings import EmulatorSettings, parse_faults
from contam.harness.errors import UserError

__all__ = ["emulator_settings", "banner", "serve_until_signal"]


def emulator_settings(options: EmulatorOptions | None = None, **keywords: Any) -> EmulatorSettings:
    """The settings of ``contam emulator``'s flags (``options``, or its fields as keywords:
    ``faults`` as on the command line; ``items`` an items file the emulator answers as a model of
    that ``profile`` would, knowing the ``documented`` subsets (comma-separated) well, or items
    by their ``exposure`` column)."""
    o = options_from(EmulatorOptions, options, keywords)
    try:
        knowledge = _knowledge(o.items, o.profile, o.seed or 0, o.documented, o.exposure)
        return EmulatorSettings(
            latency_ms=o.latency_ms, jitter_ms=o.jitter_ms, rpm=o.rpm,
            faults=parse_faults(o.faults), served_model=o.served_model,
            quota_per_day=o.quota_per_day, seed=o.seed, slots=o.slots, record=False,
            batch_processing_s=o.batch_processing_s, batch_fail_rate=o.batch_fail_rate,
            batch_expire_rate=o.batch_expire_rate, knowledge=knowledge)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _knowledge(items: str | None, profile: str, seed: int, documented: str | None,
               exposure: str | None) -> Knowledge | None:
    """The knowledge of ``--items`` and the flags that shape it; ``--documented`` must name
    subsets the file has."""
    if items is None:
        if documented is not None or exposure is not None:
            raise UserError(f"{_flag('documented')} and {_flag('exposure')} need {_flag('items')} FILE")
        return None
    if documented is None:
        return Knowledge.from_file(items, profile=profile, seed=seed, exposure=exposure)
    subsets = [name.strip() for name in documented.split(",") if name.strip()]
    knowledge = Knowledge.from_file(items, profile=profile, seed=seed, documented=subsets)
    present = {item.subset for item in knowledge.items}
    unknown = [name for name in subsets if name not in present]
    if unknown or not subsets:
        raise UserError(f"{_flag('documented')} {documented!r}: no item of {items} has subset "
                        f"{(unknown or [''])[0]!r} (its subsets: {', '.join(sorted(present))})")
    return knowledge


def banner(url: str, settings: EmulatorSettings) -> str:
    lines = [f"contam emulator listening on {url}"]
    lines += [f"  {api:<10} base_url = \"{url}/v1\"" if api == "openai" else
              f"  {api:<10} base_url = \"{url}\"" for api in DIALECTS]
    faults = ",".join(f"{k}={v:g}" for k, v in settings.faults.items()) or "none"
    lines.append(f"latency {settings.latency_ms:g} ms, rpm {settings.rpm or 'unlimited'}, "
                 f"slots {settings.slots or 'unlimited'}, "
                 f"faults {faults}, served model {settings.served_model or 'as asked'}, "
                 f"quota/day {settings.quota_per_day or 'unlimited'}; Ctrl-C stops it")
    lines.append("judge requests (told by their user text, whatever the rubric) get a label: right "
                 "when the answer holds every reference word, partially right when some, else wrong")
    if settings.knowledge is not None:
        lines.append(f"answers like a model that knows {settings.knowledge!r}; each model name "
                     "is its own model, its skill drawn from the name (contam emulator --help)")
    return "\n".join(lines)


def serve_until_signal(settings: EmulatorSettings, host: str, port: int,
                       on_ready: Callable[[str], None]) -> None:
    """``contam emulator``: serve in the foreground until SIGINT or SIGTERM."""
    try:
        asyncio.run(_serve_until_signal(settings, host, port, on_ready))
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


async def _serve_until_signal(settings: EmulatorSettings, host: str, port: int,
                              on_ready: Callable[[str], None]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await serve(settings, host=host, port=port, stop=stop, on_ready=on_ready)


def _flag(name: str) -> str:
    return flag_of(EmulatorOptions, name)
