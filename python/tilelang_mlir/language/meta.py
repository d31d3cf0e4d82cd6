"""`T.inline` and `T.meta_class`: helper classes whose methods are inlined
into the tile program that calls them (TileLang's tile schedulers).

Both only mark functions; the frontend inlines a marked method as a macro
with `self` bound where a program calls it."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Callable


def inline(fn: Callable) -> Callable:
    """Decorator on a method of a helper class: a tile program that calls
    the method inlines its body as a `T.macro` with `self` bound."""
    fn.__tile_inline__ = True
    return fn


def _stores_into_subscript(fn: Callable) -> bool:
    """Whether `fn` assigns into a subscript (`self.x[0] = ...`)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return True
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        for t in targets:
            if any(isinstance(sub, ast.Subscript) for sub in ast.walk(t)):
                return True
    return False


def meta_class(cls):
    """Class decorator for helpers that live while a tile program is built
    (TileLang's `T.meta_class`, e.g. tile schedulers): `__init__` runs as
    Python (allocating `T.alloc_var` state), every method that stores into
    a subscript (`self.x[0] = ...`) is inlined as a macro (T.inline), and
    the others (properties, helpers that return expressions) stay Python."""
    cls._is_meta_class = True
    for name, attr in list(cls.__dict__.items()):
        if name.startswith("__") or isinstance(attr, (staticmethod, classmethod, property)):
            continue
        if inspect.isfunction(attr) and _stores_into_subscript(attr):
            inline(attr)
    return cls


__all__ = ["inline", "meta_class"]
