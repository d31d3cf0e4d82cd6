"""Expressions built outside a tile program.

TileLang's T.* operations build TVM expressions wherever they are called:
at module level `T.__exp(tir.Var("x", "float32"))` is a call of dtype
float32, and `T.__exp` of an int8 variable is refused there, with the same
TypeError a program gets. Here such a call is checked and typed by
evaluating it once in a scratch function whose parameters stand for the
expression's variables (`HostVar`), inside a one-warp kernel (the
frontend's frontend/host_eval.py, reached through `state.host_evaluator`); the result
records the operation, its arguments and its dtype (`HostCall`). A tile
program that uses a host expression evaluates its operation again on its
arguments (`materialize`), so `e = T.exp(2.0)`-style values made outside
a program mean what they say inside one. A host variable has no value
inside a program: using one there is an error.

Operations that make no value (copies, barriers, stores) stay refused
outside a program with the usual error.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from ..base import dtypes as dt
from ..base.errors import TileLangError


class HostExpr:
    """A TVM-style expression made outside a tile program: `.dtype` (its
    dtype's name), `same_as`."""

    dtype: str

    def same_as(self, other) -> bool:
        return self is other


class HostVar(HostExpr):
    """`tvm.tir.Var(name, dtype)` made outside a program, of a dtype that is
    not a symbolic size (floats, bools, narrow integers, vectors)."""

    def __init__(self, name: str, dtype):
        self.name = name
        self.dtype = str(dt.as_dtype(dtype))  # as the user spells it

    def __repr__(self) -> str:
        return f"Var({self.name!r}, {self.dtype!r})"


class _Op:
    """The operation of a HostCall (`.name`, as TVM's `call.op.name`)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"Op({self.name!r})"


class HostCall(HostExpr):
    """T.<name>(*args, **kwargs) made outside a program: `.op.name`,
    `.args`, `.dtype`."""

    def __init__(self, name: str, fn: Callable, args: tuple, kwargs: dict, dtype: str):
        self.op = _Op(name)
        self.fn = fn
        self.args = list(args)
        self.kwargs = dict(kwargs)
        self.dtype = dtype

    def __repr__(self) -> str:
        args = ", ".join(repr(a) for a in self.args)
        return f"{self.op.name}({args}) : {self.dtype}"


class _Lane(int):
    """A lane index of a HostShuffle (TVM's IntImm: `.value`, `.dtype`)."""

    dtype = "int32"

    @property
    def value(self) -> int:
        return int(self)


class HostShuffle(HostCall):
    """T.extract_lane(vector, lane) made outside a program (TVM's Shuffle:
    `.vectors`, `.indices`)."""

    @property
    def vectors(self) -> List:
        return [self.args[0]]

    @property
    def indices(self) -> List:
        lane = self.args[1]
        return [lane if hasattr(lane, "value") else _Lane(int(lane))]


def _leaves(x, out: List) -> None:
    """The variables of `x` (host variables and symbolic sizes), in order."""
    from ..base.signature import SymbolicDim

    if isinstance(x, (HostVar, SymbolicDim)):
        if all(v is not x for v in out):
            out.append(x)
    elif isinstance(x, HostCall):
        for a in list(x.args) + list(x.kwargs.values()):
            _leaves(a, out)
    elif isinstance(x, (list, tuple)):
        for a in x:
            _leaves(a, out)


def _leaves_of(args, kwargs) -> List:
    out: List = []
    _leaves(list(args) + list(kwargs.values()), out)
    return out


def any_host(args, kwargs=None) -> bool:
    return any(isinstance(a, HostExpr) for a in args) or \
        any(isinstance(a, HostExpr) for a in (kwargs or {}).values())


def _plain(x) -> bool:
    """A value that may stand in a host expression's arguments."""
    from ..base.signature import SymbolicDim, SymExpr

    if isinstance(x, SymExpr):
        return isinstance(x, SymbolicDim)  # sizes' arithmetic stays the size's
    if x is None or isinstance(x, (bool, int, float, str, HostExpr, dt.DType)):
        return True
    if isinstance(x, (list, tuple)):
        return all(_plain(a) for a in x)
    return False


def defer(name: str, fn: Callable, args: tuple, kwargs: dict, refusal: Exception):
    """T.<name>(*args, **kwargs) outside a program: a HostCall of the
    result's dtype, or `refusal` where the operation makes no value or an
    argument cannot stand in an expression."""
    if not all(_plain(a) for a in args) or not all(_plain(a) for a in kwargs.values()):
        raise refusal
    from . import state

    result = state.host_evaluator(fn, args, kwargs, refusal, _leaves_of(args, kwargs), _bind)
    from .values import Scalar, Vector

    if not isinstance(result, (Scalar, Vector)):
        raise refusal
    cls = HostShuffle if name == "extract_lane" else HostCall
    return cls(name, fn, args, kwargs, str(result.dtype))


def _bind(x, env: Dict[int, Any]):
    """`x` with its variables replaced by their values in `env` (by id) and
    its operations evaluated; a host variable without a value is an error."""
    if id(x) in env:
        return env[id(x)]
    if isinstance(x, HostVar):
        raise TileLangError(f"the variable {x.name!r} ({x.dtype}) was made with "
                            "tvm.tir.Var outside this program and has no value in it: pass "
                            "it as a parameter")
    if isinstance(x, HostCall):
        return x.fn(*[_bind(a, env) for a in x.args],
                    **{k: _bind(a, env) for k, a in x.kwargs.items()})
    if isinstance(x, list):
        return [_bind(a, env) for a in x]
    if isinstance(x, tuple):
        return tuple(_bind(a, env) for a in x)
    return x


def materialize(x):
    """A host expression used inside a tile program: its operation
    evaluated there on its arguments."""
    return _bind(x, {})


__all__: Tuple[str, ...] = ("HostExpr", "HostVar", "HostCall", "HostShuffle", "defer",
                            "materialize", "any_host")
