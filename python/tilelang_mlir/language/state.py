"""The builder that is emitting IR right now (one per thread).

The seam between the T.* surface and the frontend: the frontend pushes its
builder here while it runs a tile program, and T.* operations (marked with
`_builtin.builtin`) get it from here, so that this layer needs no import of
the frontend."""

from __future__ import annotations

import threading

from ..base.errors import TileLangError

_local = threading.local()

# Evaluates a T.* operation applied outside a program (language/host_expr.py);
# set by the frontend (frontend/host_eval.py).
host_evaluator = None


def push(builder) -> None:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(builder)


def pop() -> None:
    _local.stack.pop()


def outside_error() -> TileLangError:
    return TileLangError("tile operations can only be used inside a function "
                         "decorated with @T.prim_func (or a T.macro called from one)")


def current():
    """The active builder; tile operations outside a T.prim_func fail."""
    stack = getattr(_local, "stack", None)
    if not stack:
        raise outside_error()
    return stack[-1]


def active() -> bool:
    return bool(getattr(_local, "stack", None))
