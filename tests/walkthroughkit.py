"""The docs' walkthroughs, followed as written but in-process: a ```bash block of README.md or a
page of docs/ is read line by line and each line is done here, in a copy of the repository's examples/ and demo
items, so a walkthrough that breaks (a non-zero exit, a traceback) fails a test.

- `contam ...` and `.venv/bin/contam ...` run through the in-process `contam` fixture;
- `contam emulator ... &` starts the loopback emulator with the same flags on a free port, and
  the copied examples' `http://127.0.0.1:8765` is rewritten to it; `kill %1` stops it;
- `export K=V`, a leading `K=V` and `. .venv/bin/activate` set the environment; the `until` wait
  loop has nothing to wait for.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from contam.harness.cli import build_parser, emulator_settings_from_args
from contam.harness.emulator.server import run_emulator

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
EMULATOR_PORT = "http://127.0.0.1:8765"

__all__ = ["README", "ROOT", "Step", "Walkthrough", "bash_block", "section"]


def section(heading: str, doc: Path = README) -> str:
    """``doc``'s text (the README, or a page of docs/) from ``heading`` (a whole heading line, or
    text that starts a line) to the next heading."""
    text = doc.read_text(encoding="utf-8")
    start = text.index("\n" + heading) + 1
    rest = text[start:].split("\n", 1)[1]
    following = re.search(r"^#{1,4} ", rest, re.MULTILINE)
    return rest[: following.start()] if following else rest


def bash_block(heading: str, after: str = "", doc: Path = README) -> list[str]:
    """The lines of the first ```bash block of ``heading``'s section of ``doc`` (after the text
    ``after``)."""
    text = section(heading, doc)
    text = text[text.index(after):] if after else text
    return re.search(r"```bash\n(.*?)```", text, re.DOTALL).group(1).splitlines()


@dataclass
class Step:
    """One README line done: its words and what `contam` said."""

    words: list[str]
    status: int
    out: str
    err: str


@dataclass
class Walkthrough:
    """Follows README lines in ``folder`` (the working folder: examples/ and harness/data/ are
    copied there), with the `contam` fixture and pytest's ``monkeypatch``."""

    folder: Path
    contam: Callable[..., tuple[int, str, str]]
    monkeypatch: object
    steps: list[Step] = field(default_factory=list)
    _emulators: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def __post_init__(self) -> None:
        shutil.copytree(ROOT / "examples", self.folder / "examples")
        shutil.copytree(ROOT / "harness" / "data", self.folder / "harness" / "data")
        self.monkeypatch.chdir(self.folder)

    def follow(self, lines: list[str]) -> list[Step]:
        """Do every line; each `contam` command must exit 0 without a traceback. An emulator a
        line starts runs until `kill %1` or :meth:`close`."""
        for line in lines:
            self.do(line)
        return self.steps

    def close(self) -> None:
        self._emulators.close()

    def do(self, line: str) -> None:
        words = shlex.split(line, comments=True)
        if not words or words[0] in (".", "until", "done"):
            return  # the venv's activate, the wait until the emulator listens
        if words == ["kill", "%1"]:
            self._emulators.close()
            return
        if words[0] == "export":
            words = words[1:]
        while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
            name, value = words.pop(0).split("=", 1)
            self.monkeypatch.setenv(name, value)
        if words and Path(words[0]).name == "contam":
            self._contam(words[1:], line)

    def _contam(self, args: list[str], line: str) -> None:
        if args[0] == "emulator":  # `contam emulator ... &`
            self._start_emulator([word for word in args if word != "&"])
            return
        status, out, err = self.contam(*args)
        assert status == 0 and "Traceback" not in out + err, (line, status, out[-2000:], err[-2000:])
        self.steps.append(Step(args, status, out, err))

    def _start_emulator(self, args: list[str]) -> None:
        settings = emulator_settings_from_args(build_parser().parse_args(args))
        emu = self._emulators.enter_context(run_emulator(settings))
        for config in (self.folder / "examples").rglob("*.toml"):
            text = config.read_text(encoding="utf-8")
            config.write_text(text.replace(EMULATOR_PORT, emu.url), encoding="utf-8")

    def step(self, command: str) -> Step:
        """The last step whose command (its first word) was ``command``."""
        return next(step for step in reversed(self.steps) if step.words[0] == command)
