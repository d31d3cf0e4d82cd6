"""MLIR contexts: `make_context` lives in the frontend (`frontend/context.py`),
which emits IR before the compiler runs; kept here for the code that imports
it from this module."""

from ..frontend.context import make_context  # noqa: F401
