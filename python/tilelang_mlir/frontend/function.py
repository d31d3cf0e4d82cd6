"""Functions written in the DSL: their closures, the fingerprints that stand
for them in cache keys, and `@T.macro` (a helper inlined where a tile
program calls it). `@T.prim_func` (prim_func.py) builds on these.
"""

from __future__ import annotations

import hashlib
import inspect
import linecache
import os
from typing import Any, Callable, Dict, Optional

from ..base.dtypes import DType
from ..base.errors import TileLangError
from ..base.signature import SymbolicDim, TensorType
from .source import FunctionSource, parse_function


def _closure_env(fn: Callable) -> Dict[str, Any]:
    env = dict(fn.__globals__)
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                env[name] = cell.cell_contents
            except ValueError:  # an unassigned cell
                pass
    return env


def _closure_values(fn: Callable) -> Dict[str, Any]:
    values = {}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                values[name] = cell.cell_contents
            except ValueError:
                pass
    return values


def _global_names(code, out: set) -> set:
    """The global names a code object (and the code nested in it) reads."""
    out.update(code.co_names)
    for c in code.co_consts:
        if inspect.iscode(c):
            _global_names(c, out)
    return out


def _key_values(fn: Callable) -> Dict[str, Any]:
    """What a DSL function's IR depends on besides its source: its captured
    values and the module-level values it reads (`BLOCK = int(sys.argv[1])`
    at the top of a script: a kernel cache keyed without them served a
    kernel of another value)."""
    values = _closure_values(fn)
    code = getattr(fn, "__code__", None)
    module = getattr(fn, "__globals__", None)
    if code is not None and module is not None:
        for name in sorted(_global_names(code, set())):
            if name in module and name not in values:
                values["global " + name] = module[name]
    return values


def _code_text(code) -> Optional[str]:
    """The source text a code object was compiled from, from its
    instructions' positions (the same under every Python that has them, as
    bytecode is not: a kernel cache prepared with one Python version must
    serve another); None without positions or source (eval'd code)."""
    try:
        pos = [p for p in code.co_positions() if None not in p]
    except AttributeError:
        return None
    lines = linecache.getlines(code.co_filename)
    if not pos or not lines:
        return None
    (l0, c0), (l1, c1) = min((p[0], p[2]) for p in pos), max((p[1], p[3]) for p in pos)
    seg = [line.encode() for line in lines[l0 - 1:l1]]
    if not seg:
        return None
    if len(seg) == 1:
        return seg[0][c0:c1].decode(errors="replace")
    seg[0], seg[-1] = seg[0][c0:], seg[-1][:c1]
    return b"".join(seg).decode(errors="replace")


def _code_digest(code) -> str:
    """A digest of what a code object computes (its source text where it
    has one, else its bytecode; its constants and names; not its file's
    path, so that a kernel cache prepared in one checkout serves another)."""
    def consts(c):
        return tuple(_code_digest(x) if inspect.iscode(x) else repr(x) for x in c.co_consts)

    body = _code_text(code)
    text = repr((code.co_code if body is None else body, consts(code), code.co_names,
                 code.co_varnames, code.co_freevars, code.co_firstlineno))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _fingerprint(value, depth: int = 0) -> str:
    """A stable text for a closure value, for cache keys."""
    if depth > 4:
        return "..."
    if isinstance(value, (int, float, bool, str, type(None), DType)):
        return repr(value)
    # Values whose type alone would make every one of them the same key
    # (`A[sl]` with a captured slice, a NumPy integer size).
    if isinstance(value, slice):
        return ("slice(" + ",".join(_fingerprint(v, depth + 1)
                                    for v in (value.start, value.stop, value.step)) + ")")
    if isinstance(value, range):
        return f"range({value.start},{value.stop},{value.step})"
    if type(value).__module__ == "numpy" and hasattr(value, "dtype") and \
            getattr(value, "shape", None) == ():
        return f"numpy.{value.dtype}({value.item()!r})"
    if isinstance(value, (tuple, list)):
        return type(value).__name__ + "(" + ",".join(_fingerprint(v, depth + 1) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_fingerprint(k, depth + 1)}:{_fingerprint(v, depth + 1)}"
                              for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))) + "}"
    if isinstance(value, TileFunction):
        return value.fingerprint()
    if isinstance(value, SymbolicDim):
        return f"dyn({value.name})"
    if isinstance(value, TensorType):
        return f"tensor({_fingerprint(value.shape)},{value.dtype})"
    if inspect.ismodule(value):
        return f"module({value.__name__})"
    if inspect.isfunction(value):
        # The source alone does not tell apart the functions one factory
        # makes (T.reduce_max and T.reduce_min share a `def`; so do a
        # user's `make_op(scale)` lambdas): their names and captured values
        # are part of the key too.
        # The code object too: getsource gives a lambda's whole line, which
        # other lambdas may share, and nothing for eval'd code.
        inner = inspect.unwrap(value)
        try:
            text = hashlib.sha256(inspect.getsource(value).encode()).hexdigest()[:16]
        except (OSError, TypeError):
            text = ""
        text += "," + _code_digest(inner.__code__)
        captured = ",".join(_fingerprint(v, depth + 1) for v in
                            list(_key_values(value).values()) +
                            (list(_key_values(inner).values()) if inner is not value else []) +
                            list(value.__defaults__ or ()))
        return f"fn({text},{value.__module__}.{value.__qualname__},{captured})"
    if hasattr(value, "value") and hasattr(type(value), "__members__"):  # enums
        return repr(value)
    return f"{type(value).__qualname__}"


def source_place(source: FunctionSource) -> str:
    """Where a DSL function's source is, for cache keys: the file name and
    first line (its ops carry their lines, and device assertions report
    them from inside the binary; the directory is left out, so that a
    kernel cache prepared in one checkout serves another)."""
    return f"{os.path.basename(source.filename)}:{source.first_line}:{source.indent}"


class TileFunction:
    """A Python function written in the DSL (`PrimFunc`, `Macro`): its
    fingerprint stands for it in the cache keys of the programs that use it.
    Subscriptable as TileLang's generic classes are (`T.PrimFunc[P, R]`,
    `T.JITFunc[P, R]` in annotations): the class itself."""

    def __class_getitem__(cls, item):
        return cls

    def fingerprint(self) -> str:
        raise NotImplementedError


class Macro(TileFunction):
    """`@T.macro`: a helper written in the DSL, inlined where it is called."""

    def __init__(self, fn: Callable):
        self.fn = fn
        self.name = fn.__name__
        self._source: Optional[FunctionSource] = None

    def source(self) -> FunctionSource:
        if self._source is None:
            self._source = parse_function(self.fn)
        return self._source

    def env(self) -> Dict[str, Any]:
        return _closure_env(self.fn)

    def fingerprint(self) -> str:
        closure = ",".join(f"{k}={_fingerprint(v)}" for k, v in
                           sorted(_key_values(self.fn).items()))
        source = self.source()
        return f"macro({source.digest()[:16]},{source_place(source)},{closure})"

    def __call__(self, *args, **kwargs):
        raise TileLangError(f"macro {self.name!r} can only be called inside a T.prim_func")

    def __get__(self, obj, owner=None):
        """A macro that is a method (T.inline, T.meta_class) binds `self`."""
        if obj is None:
            return self
        return BoundMacro(self, obj)

    def reference_params(self):
        """The parameters annotated T.Ref (or T.Var): passed by reference."""
        from ..base.signature import SymbolicDim
        from ..language.types import Ref

        out = set()
        for name, p in inspect.signature(self.fn).parameters.items():
            ann = p.annotation
            if ann is Ref or ann is SymbolicDim or (isinstance(ann, str) and
                                                    ann.split(".")[-1] in ("Ref", "Var")):
                out.add(name)
        return out


class BoundMacro(Macro):
    """A macro method bound to an object (its first argument)."""

    def __init__(self, macro: Macro, obj):
        self.__dict__.update(macro.__dict__)
        self.bound_self = obj


def macro(fn: Callable = None) -> Macro:
    """Decorator: a function of T.* statements inlined where it is called
    inside a tile program (TileLang's `@T.macro`); its arguments are
    buffers, values and Python constants. A parameter annotated `T.Ref`
    takes a `T.alloc_var` variable or a buffer element by reference:
    assigning to it in the macro stores there."""
    if fn is None:
        return macro
    return Macro(fn)
