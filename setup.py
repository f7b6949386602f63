"""The package list, the one thing pyproject.toml cannot say: every package found in harness/,
providers/ and metrics/, installed under the import name ``contam`` (pyproject.toml's package-dir
maps the folders). Found, not listed, so a new subpackage is never left out of the wheel."""

from setuptools import find_packages, setup

FOLDERS = ("harness", "providers", "metrics")

setup(packages=["contam", *(f"contam.{name}"
                            for name in find_packages(include=[f"{f}*" for f in FOLDERS]))])
