"""`contam view` as a child process (so that it can be killed with SIGKILL and started again), and
Debian's headless chromium driven by Selenium through Debian's chromedriver. Shared by the browser
tests (tests/browserkit.py), scripts/view_screenshots.py and scripts/bench_view.py."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

__all__ = ["CHROMIUM", "CHROMEDRIVER", "chromium", "ViewServer"]

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
# Headless, and nothing a test machine without a network or a display would wait for.
_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
          "--no-first-run", "--disable-background-networking", "--disable-component-update",
          "--disable-sync")


@contextmanager
def chromium(width: int = 1280, height: int = 800) -> Iterator:
    """A headless chromium with a fresh profile, quit and removed afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="contam-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        driver.set_window_size(width, height)
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


class ViewServer:
    """`contam view` in a child process; ``url`` is the one line it printed. Its stderr goes to a
    temporary file and the rest of its stdout is read and dropped: a pipe nobody reads would
    block a server that writes much."""

    def __init__(self, store: Path, *args: str) -> None:
        self.store, self.args = store, args
        self.process: subprocess.Popen | None = None
        self.url = ""
        self._stderr: IO[str] | None = None

    def start(self, timeout: float = 60.0) -> "ViewServer":
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if self._stderr is not None:  # started again (after kill9)
            self._stderr.close()
        self._stderr = tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "contam.harness.cli", "view", "--store", str(self.store), "--port", "0",
             *self.args], stdout=subprocess.PIPE, stderr=self._stderr, text=True, env=env)
        line = _first_line(self.process, timeout)
        if not line.startswith("contam view: http://"):
            self.stop()
            self._stderr.seek(0)
            raise AssertionError(f"contam view did not start: {line!r} {self._stderr.read()}")
        self.url = line.split(": ", 1)[1].strip()
        return self

    @property
    def base(self) -> str:
        return self.url.split("/?", 1)[0]

    def kill9(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill9()

    def __enter__(self) -> "ViewServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _first_line(process: subprocess.Popen, timeout: float) -> str:
    """The first line the process prints; what it prints after that is read and dropped."""
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        lines.put(process.stdout.readline())
        for _line in process.stdout:
            pass

    threading.Thread(target=read, daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        return f"(nothing printed in {timeout:.0f} s)"
