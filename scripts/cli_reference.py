"""Write docs/reference/cli.md, the command-line reference, from the commands' declarations
(contam.harness.cli.parser's COMMANDS, each options class's fields, the probe registry): every command
and every argument with its value, default and help. Never edited by hand.

Usage: python scripts/cli_reference.py            (rewrites docs/reference/cli.md)
       python scripts/cli_reference.py --check    (exit 1 if the page is stale)
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import redirect_stdout, suppress
from io import StringIO
from pathlib import Path

from contam.harness.cli import parse_args
from contam.harness.cli.flags import ShownFlag, command_flags, parser_default
from contam.harness.cli.parser import COMMANDS, CONFIG, DESCRIPTION, TOP_DOCS, VERBOSE_HELP, VERSION_HELP, Command
from contam.harness.declare import Flag
from contam.harness.jobs.options.lane import ProbeOptions
from contam.harness.jobs.options.store import store_flag
from contam.metrics.probe_registry import PROBES, ProbeSpec

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs/reference/cli.md"
VERBOSE = ShownFlag(Flag("-v, --verbose", action="count"), "verbose", 0, VERBOSE_HELP)
VERSION = ShownFlag(Flag("--version", action="version"), None, None, VERSION_HELP)
HEADER = """# Command-line reference

Every `contam` command and argument, generated from their declarations by
`python scripts/cli_reference.py` (a test fails when this page is stale). Each command's
`--help` says the same, and ends with the page that explains the command.
"""


def reference() -> str:
    """The whole page."""
    parts = [HEADER, _section("contam", _usage([]), DESCRIPTION, TOP_DOCS, [VERSION, VERBOSE])]
    for command in COMMANDS:
        parts.append(_section(f"contam {command.name}", _usage([command.name]), command.help,
                              command.docs, list(arguments(command))))
        if command.name == "probe":
            for kind, spec in PROBES.items():
                parts.append(_section(f"contam probe {kind}", _usage(["probe", kind]),
                                      spec.summary, command.docs, list(probe_arguments(spec))))
    return "\n".join(parts)


def arguments(command: Command) -> Iterator[ShownFlag]:
    """A command's arguments in the order its help lists them."""
    yield from (_plain(flag) for flag in command.before)
    if command.options is not None:
        yield from command_flags(command.options)
    yield from (_plain(flag) for flag in command.after)
    yield VERBOSE


def probe_arguments(spec: ProbeSpec) -> Iterator[ShownFlag]:
    yield from (_plain(flag) for flag in (CONFIG, store_flag(None)))
    yield from command_flags(ProbeOptions, skip=() if spec.batchable else ("batch",))
    yield VERBOSE
    for option in spec.options:
        yield ShownFlag(Flag(option.flag, metavar=option.name.upper()), option.name,
                        option.default, option.help)


def _plain(flag: Flag) -> ShownFlag:
    return ShownFlag(flag, None, parser_default(flag), flag.help_text())


def _section(title: str, usage: str, summary: str, docs: str, rows: list[ShownFlag]) -> str:
    lines = [f"## {title}", "", summary, "", "```text", usage, "```", "",
             f"Explained in [{docs}](../{docs.removeprefix('docs/')}).", "",
             "| argument | value | default | meaning |", "|---|---|---|---|"]
    lines += [_row(shown) for shown in rows]
    return "\n".join(lines) + "\n"


def _row(shown: ShownFlag) -> str:
    cells = (f"`{shown.flag.flag}`", _code(shown.value), _default(shown),
             (shown.help or "").replace("|", "\\|"))
    return "| " + " | ".join(cells) + " |"


def _default(shown: ShownFlag) -> str:
    if not shown.flag.takes_value or shown.flag.action == "append":
        return "" if shown.default in (None, False, True, 0) else _code(repr(shown.default))
    if shown.flag.required or shown.default is None:
        return ""
    return _code(str(shown.default))


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def _usage(words: list[str]) -> str:
    """The usage lines of ``contam WORDS --help``, 100 columns wide."""
    shown = StringIO()
    with redirect_stdout(shown), suppress(SystemExit):
        parse_args([*words, "--help"])
    return shown.getvalue().split("\n\n", 1)[0]


def main(argv: list[str]) -> int:
    text = reference()
    if "--check" in argv:
        stale = not PAGE.exists() or PAGE.read_text(encoding="utf-8") != text
        print(f"{PAGE.relative_to(ROOT)}: {'stale' if stale else 'up to date'}")
        return 1 if stale else 0
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    import os

    os.environ["COLUMNS"] = "100"  # the usage lines wrap the same on every terminal
    sys.exit(main(sys.argv[1:]))
