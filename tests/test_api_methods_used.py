"""The Python API's classes carry no dead methods: every public method or property of a class
that `contam.harness.api` exports is called (``.name``) somewhere else in the code, the tests, the
examples or the docs. A method nobody calls is either removed or put to use."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import contam.harness.api as api

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("harness", "metrics", "providers", "scripts", "tests", "examples", "docs")
SUFFIXES = (".py", ".md", ".html", ".js")


def _texts() -> list[str]:
    return [path.read_text(encoding="utf-8") for folder in FOLDERS
            for path in (ROOT / folder).rglob("*")
            if path.suffix in SUFFIXES and "__pycache__" not in path.parts]


def _public_methods(cls: type) -> list[str]:
    """The methods and properties the class's own body defines, private ones left out."""
    return [name for name, value in vars(cls).items() if not name.startswith("_")
            and (inspect.isfunction(value) or isinstance(value, property))]


def test_every_public_method_of_the_apis_classes_is_called_somewhere():
    texts = _texts()
    classes = [getattr(api, name) for name in api.__all__ if inspect.isclass(getattr(api, name))]
    unused = [f"{cls.__name__}.{method}" for cls in classes for method in _public_methods(cls)
              if not any(re.search(rf"\.{method}\b", text) for text in texts)]
    assert classes and unused == []
