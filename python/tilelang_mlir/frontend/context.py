"""MLIR contexts for compilation."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def make_context():
    """A fresh Context with every dialect tilelang-mlir uses registered."""
    from .. import ir

    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = False
        yield ctx
