"""The package's version (pyproject.toml holds the same number)."""

__version__ = "0.1.0"
