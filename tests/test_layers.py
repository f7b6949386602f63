"""The import rule of ARCHITECTURE.md, The layers: no circle, no import from a lower layer to a higher one."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKER = ROOT / "scripts" / "check_layers.py"


def check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECKER), str(root)], capture_output=True, text=True)


def test_the_tree_has_no_circle_and_no_upward_import() -> None:
    result = check(ROOT)
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip().startswith("0 circles, 0 upward imports")


def _write(root: Path, name: str, body: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(body))


def test_the_checker_reports_a_circle_and_upward_imports(tmp_path: Path) -> None:
    for package in ("harness", "harness/engine", "harness/jobs", "providers", "metrics"):
        _write(tmp_path, f"{package}/__init__.py", "")
    _write(tmp_path, "harness/engine/lanes.py", "from contam.harness.jobs.run import x\n")
    _write(tmp_path, "harness/jobs/run.py", "from contam.harness.engine import lanes\n")
    _write(tmp_path, "providers/base.py", "from contam.harness.config import ModelSpec\n")
    _write(tmp_path, "harness/config.py", "import contam.providers.base\n")
    result = check(tmp_path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert "circle: contam.harness.engine.lanes <-> contam.harness.jobs.run" in lines
    assert "circle: contam.harness.config <-> contam.providers.base" in lines
    assert "upward: contam.harness.engine.lanes -> contam.harness.jobs.run" in lines
    assert "upward: contam.providers.base -> contam.harness.config" in lines
    assert "upward: contam.harness.config -> contam.providers.base" in lines


def test_scripts_import_nothing_from_the_tests() -> None:
    import ast

    for path in sorted((ROOT / "scripts").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                   for alias in node.names]
        modules += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        assert not [m for m in modules if m == "tests" or m.startswith("tests.")], path.name
