"""Marks T.* functions that emit IR and fetches the active builder."""

from __future__ import annotations

import functools

from . import state


def builtin(fn):
    """A tile operation: it emits IR while a prim_func is being compiled;
    outside one, an operation that makes a value from plain arguments is a
    host expression (host_expr.py), any other is an error."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not state.active():
            from .host_expr import defer

            return defer(fn.__name__, wrapper, args, kwargs, state.outside_error())
        return fn(state.current(), *args, **kwargs)

    wrapper.__tile_builtin__ = True
    return wrapper
