"""contam: measure how much of a language model's benchmark score is memorised text.

The Python entry point: ``import contam`` and call the jobs as the command line runs them,
``contam.run(...)``, ``contam.score(...)``, ``contam.sql(...)``, ``contam.cells(...)`` ... (every name
of ``contam.harness.api``, imported on first use, so that ``import contam`` costs nothing). The code
lives in three subpackages: ``contam.harness``, ``contam.providers`` and ``contam.metrics``.
"""

from pathlib import Path as _Path

# In a source checkout this folder holds only this file: the subpackages are the repository's
# top-level folders harness/, providers/ and metrics/ (setuptools' package-dir maps them when it
# builds a wheel or an editable install). Where the repository root itself is on sys.path (pytest
# from the root, `python -c` there), the root is searched for them too, so `contam.harness` is
# this checkout's code. An installed wheel has them inside this folder and adds nothing.
_ROOT = _Path(__file__).resolve().parent.parent
if not (_Path(__file__).parent / "harness").is_dir() and (_ROOT / "harness" / "__init__.py").is_file():
    __path__.append(str(_ROOT))  # noqa: F821 - a package's own __path__

from contam.harness import __version__  # noqa: E402 - needs the search path above

_API = "contam.harness.api"


def __getattr__(name: str):
    """``contam.run`` and the rest of the API, imported when first asked for (PEP 562)."""
    import importlib

    api = importlib.import_module(_API)
    if name in api.__all__:
        return getattr(api, name)
    raise AttributeError(f"module 'contam' has no attribute {name!r}")


def __dir__() -> list[str]:
    import importlib

    return sorted({*globals(), *importlib.import_module(_API).__all__})
