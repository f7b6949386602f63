"""The two things `contam bench --emulator` measures the harness against.

Design notes: ARCHITECTURE.md, The bench's floor.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import httpx
import orjson

from contam.harness.declare import flag_of
from contam.harness.emulator.options import EmulatorOptions
from contam.harness.engine.collector import collector_tuned

__all__ = ["BareTarget", "BareResult", "bare_loop", "emulator_process", "EmulatorProcess",
           "process_cpu_s"]


@dataclass(frozen=True, kw_only=True)
class BareTarget:
    """One protocol's request, as its provider would send it."""

    name: str
    url: str
    headers: dict[str, str]
    payload: dict


@dataclass(frozen=True, kw_only=True)
class BareResult:
    requests: int
    ok: int
    wall_s: float
    cpu_s: float


async def bare_loop(targets: Sequence[BareTarget], *, requests: int, concurrency: int,
                    timeout_s: float) -> BareResult:
    """``requests`` to each target, ``concurrency`` at a time per target, all targets at once."""
    counts = [0]
    # One TLS context for all clients, as a careful user shares it: building one loads the CA
    # bundle (~20 ms and ~1 MB each), which would otherwise dwarf what is measured.
    tls = httpx.create_ssl_context()
    with collector_tuned():  # the garbage collector's settings of the engine, for a fair count
        cpu, wall = time.process_time(), time.perf_counter()
        async with asyncio.TaskGroup() as group:
            for target in targets:
                todo = iter(range(requests))
                for _ in range(min(concurrency, requests)):
                    group.create_task(_bare_worker(target, todo, timeout_s, tls, counts))
    return BareResult(requests=requests * len(targets), ok=counts[0],
                      wall_s=time.perf_counter() - wall, cpu_s=time.process_time() - cpu)


async def _bare_worker(target: BareTarget, todo: Iterator[int], timeout_s: float,
                       tls: ssl.SSLContext, counts: list[int]) -> None:
    headers = {**target.headers, "content-type": "application/json"}
    async with httpx.AsyncClient(timeout=timeout_s, verify=tls) as client:
        for _ in todo:
            response = await client.post(target.url, content=orjson.dumps(target.payload),
                                         headers=headers)
            if response.status_code == 200 and orjson.loads(response.content):
                counts[0] += 1


# ------------------------------------------------------------------------------ the emulator

@dataclass(frozen=True)
class EmulatorProcess:
    url: str
    pid: int

    def base_url(self, provider: str) -> str:
        """The ``base_url`` a [[models]] entry of that provider needs (as Emulator.base_url)."""
        return f"{self.url}/v1" if provider == "openai" else self.url


@contextlib.contextmanager
def emulator_process(*, latency_ms: float, rpm: float | None = None,
                     slots: int | None = None) -> Iterator[EmulatorProcess]:
    """``contam emulator`` on a free loopback port, for the duration of the ``with`` block."""
    given = {"host": "127.0.0.1", "port": "0", "latency_ms": repr(latency_ms),
             "rpm": repr(rpm) if rpm else None, "slots": str(slots) if slots else None}
    # -P: a folder named like the package in the working directory must not shadow it
    command = [sys.executable, "-P", "-m", "contam.harness.cli", "emulator"]
    for name, value in given.items():
        command += [flag_of(EmulatorOptions, name), value] if value is not None else []
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        banner = process.stdout.readline()  # "contam emulator listening on http://127.0.0.1:PORT"
        if "listening on" not in banner:
            raise RuntimeError(f"the emulator did not start (exit status {process.wait()})")
        yield EmulatorProcess(banner.split()[-1], process.pid)
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()


def process_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) a process has used so far: Linux's /proc, else None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
