"""Marks T.* functions that emit IR and fetches the active builder."""

from __future__ import annotations

import functools

from . import state


def builtin(fn):
    """A tile operation: usable only while a prim_func is being compiled."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(state.current(), *args, **kwargs)

    wrapper.__tile_builtin__ = True
    return wrapper
