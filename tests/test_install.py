"""contam installs under its own import name: the wheel, in a fresh venv beside another
distribution that owns the top-level name ``metrics`` (as metrics 0.0.2 on PyPI does), imports
both, and neither shadows the other. Offline: the other distribution is built here."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import contam

ROOT = Path(__file__).resolve().parent.parent


def _wheel(source: Path, into: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index",
                    "--no-build-isolation", "--wheel-dir", str(into), str(source)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = into.glob("*.whl")
    return wheel


def _other_metrics(tmp_path: Path) -> Path:
    """A distribution named other-metrics whose one package is the top-level ``metrics``."""
    source = tmp_path / "other"
    (source / "metrics").mkdir(parents=True)
    (source / "metrics" / "__init__.py").write_text('OWNER = "other-metrics"\n')
    (source / "pyproject.toml").write_text(textwrap.dedent("""\
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "other-metrics"
        version = "0.0.2"
        [tool.setuptools]
        packages = ["metrics"]
        """))
    return _wheel(source, tmp_path / "other-wheel")


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory) -> Path:
    """A venv without system site-packages, holding contam's wheel and the other ``metrics``."""
    tmp_path = tmp_path_factory.mktemp("install")
    wheels = [_wheel(ROOT, tmp_path / "contam-wheel"), _other_metrics(tmp_path)]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    # pip runs inside the venv's python: without PYTHONPATH, or a checkout on it (its egg-info)
    # would count as contam installed already
    outside = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                    "install", "--quiet", "--no-deps", "--no-index", *map(str, wheels)],
                   check=True, capture_output=True, timeout=300, env=outside)
    return venv


def _run_in(venv: Path, code: str) -> str:
    """Runs CODE in the venv from a folder outside the checkout, so the checkout is not on
    sys.path."""
    result = subprocess.run([str(venv / "bin" / "python"), "-c", code], cwd=venv,
                            capture_output=True, text=True, timeout=120, env={})
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_wheel_imports_beside_a_distribution_owning_metrics(fresh_venv):
    printed = _run_in(fresh_venv, "import contam, metrics, contam.metrics as own; "
                                  "print(contam.__version__, metrics.OWNER, own.__name__)")
    assert printed == f"{contam.__version__} other-metrics contam.metrics"


def test_the_wheel_holds_the_code_inside_the_contam_package(fresh_venv):
    printed = _run_in(fresh_venv, "import contam.harness.cli, contam.providers.base, sys; "
                                  "print(contam.harness.cli.__file__.count('site-packages'), "
                                  "sorted(m for m in ('harness', 'providers') if m in sys.modules))")
    assert printed == "1 []"


def test_the_wheel_ships_the_package_data(fresh_venv):
    code = ("from importlib import resources; "
            "print(resources.files('contam.harness').joinpath('data/demo_items.csv').is_file(), "
            "resources.files('contam.metrics').joinpath('judge_rubric.txt').is_file())")
    assert _run_in(fresh_venv, code) == "True True"


def test_the_api_is_contams_own_attributes():
    assert contam.run is contam.harness.api.run and contam.sql is contam.harness.api.sql
    assert "cells" in dir(contam)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        contam.nothing  # noqa: B018 - the attribute access is the test
