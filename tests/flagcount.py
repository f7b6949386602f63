"""Which source files spell a command-line flag: in a string of their code (a message, a help
text), docstrings and comments aside, where a flag's name belongs to its declaration alone."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from contam.harness.cli.parser import COMMANDS
from contam.harness.declare import declared
from contam.harness.jobs.options.lane import ProbeOptions
from contam.metrics.probe_registry import PROBES

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("harness", "metrics", "providers")
# Where options are declared: the options modules, their helpers, and the probe registry (each
# probe's options, their flags made from their names).
DECLARATIONS = ("harness/declare.py", "harness/jobs/options/", "harness/emulator/options.py",
                "metrics/probe_registry.py")


def every_flag() -> set[str]:
    """The flags of every command, as their declarations give them."""
    flags = {flag.flag for c in COMMANDS for flag in (*c.before, *c.after)}
    for cls in {c.options for c in COMMANDS if c.options} | {ProbeOptions}:
        flags |= {flag.flag for _, flag in declared(cls)}
    flags |= {option.flag for spec in PROBES.values() for option in spec.options}
    return {flag for flag in flags if flag.startswith("--")}


def code_strings(path: Path) -> Iterator[str]:
    """The string constants of a module's code, f-strings' parts included, docstrings and the
    commands' example lines (shown under their help) left out."""
    examples = {command.example for command in COMMANDS}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in docstrings and node.value not in examples):
            yield node.value


def spelled_outside_declarations() -> dict[str, set[str]]:
    """flag -> the source files outside :data:`DECLARATIONS` whose code spells it (none: absent)."""
    found = files_spelling(every_flag())
    outside = {flag: {path for path in paths if not path.startswith(DECLARATIONS)}
               for flag, paths in found.items()}
    return {flag: paths for flag, paths in outside.items() if paths}


def files_spelling(flags: set[str]) -> dict[str, set[str]]:
    """flag -> the source files (relative paths) whose code spells it."""
    found: dict[str, set[str]] = {flag: set() for flag in flags}
    patterns = {flag: re.compile(rf"(?<![\w-]){re.escape(flag)}(?![\w-])") for flag in flags}
    for package in SOURCES:
        for path in (ROOT / package).rglob("*.py"):
            text = "\n".join(code_strings(path))
            for flag, pattern in patterns.items():
                if pattern.search(text):
                    found[flag].add(str(path.relative_to(ROOT)))
    return found

