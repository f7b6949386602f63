"""ARCHITECTURE.md names only what exists: every module, class, function or constant it writes in
backticks as a dotted name (``contam.harness.engine.pool``, ``prompts.QuestionPrompt.request``,
``"contam.harness.report.parts.probe_cdd:section"``) imports and resolves, a ``Class.member`` is defined in
that class of the code, and every file it names (``jobs/run.py``, ``layout.css``) is a file of the
repository."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "providers", "metrics")
# A name is looked up as written, then under each package and harness's own (`engine.lanes`,
# `config_schema.METRIC_DISPLAY` are harness's); `contam.` covers the installed import name.
BASES = ("", "contam.", "contam.harness.", "harness.")
# Names the text gives to what lives on an instance, not on a module or class.
INSTANCE_ATTRIBUTES = {"store.con", "engine.interrupted"}
CODE = re.compile(r"`([^`\s]+)`")
FILE = re.compile(r"\.(py|html|css|js|txt|csv|md|yml)$")
DATA = re.compile(r"\.(json|gguf|duckdb|toml|log|sock|host)$")  # a user's files, not the repository's
DOTTED = re.compile(r"""^"?([A-Za-z_][\w]*(?:[./][A-Za-z_]\w*)+(?::\w+)?)"?$""")


def mentions() -> list[str]:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    return sorted({m.group(1) for code in CODE.findall(text)
                   if (m := DOTTED.match(code)) and not DATA.search(m.group(1))})


OUTSIDE = {".venv", ".git", "build", "runs"}  # not the repository's own files


def _files() -> list[str]:
    return [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if not OUTSIDE & set(p.parts)]


def class_members() -> dict[str, set[str]]:
    """Every class of the project's code and the names its body defines."""
    members: dict[str, set[str]] = {}
    for path in (p for package in PACKAGES for p in (ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                members.setdefault(node.name, set()).update(_defined(node))
    return members


def _defined(node: ast.ClassDef) -> set[str]:
    names = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return names | {n.target.id for n in node.body
                    if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}


def path_exists(name: str, files: list[str]) -> bool:
    """``jobs/run.py`` is harness/jobs/run.py: a path is matched at the end of a repository path."""
    return any(f == name or f.endswith("/" + name) for f in files)


def resolves(name: str) -> bool | None:
    """True if NAME is a module, or a module's attribute chain; None if its first part is no
    module at all (a table's column, a record's key: not a name of the code)."""
    parts = name.replace(":", ".").replace("/", ".").split(".")
    for base in BASES:
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(base + ".".join(parts[:cut]))
            except ImportError:
                continue
            return _attributes(obj, parts[cut:])
    return None


def _attributes(obj: object, names: list[str]) -> bool:
    for attribute in names:
        if not hasattr(obj, attribute):
            return False
        obj = getattr(obj, attribute)
    return True


def test_every_dotted_name_architecture_md_writes_resolves():
    names = [n for n in mentions() if not FILE.search(n) and n not in INSTANCE_ATTRIBUTES]
    checked = {name: resolves(name) for name in names if not name[0].isupper()}
    assert [n for n, ok in checked.items() if ok is False] == []
    assert sum(ok is True for ok in checked.values()) > 30  # the check saw the names at all


def test_every_class_member_architecture_md_writes_is_defined_in_that_class():
    members = class_members()
    named = [n.split(".") for n in mentions() if n[0].isupper() and not FILE.search(n)]
    ours = [(cls, member) for cls, member, *_ in named if cls in members]  # not httpx's AsyncClient
    assert [f"{c}.{m}" for c, m in ours if m not in members[c]] == []
    assert len(ours) >= 3


def test_every_file_architecture_md_names_is_in_the_repository():
    files = _files()
    paths = [n for n in mentions() if FILE.search(n)]
    assert [p for p in paths if not path_exists(p, files)] == []
    assert len(paths) > 20


def test_a_wrong_name_or_path_is_caught():
    assert resolves("contam.harness.prompts.question_request") is True
    assert resolves("prompts.QuestionPrompt.request") is True
    assert resolves("prompts.no_such_function") is False
    assert resolves("contam.harness.engine.no_such_module") is False
    assert not path_exists("jobs/no_such_job.py", _files())
    assert "write_durably" in class_members()["BatchWriter"]
