"""contam: measure how much of a language model's benchmark score is memorised text."""

__all__ = ["__version__"]

__version__ = "0.1.0"  # the one place it is written: pyproject.toml reads it, runs and reports record it
