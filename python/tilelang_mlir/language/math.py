"""Scalar math of tile programs.

Each function works on compile-time Python numbers (evaluated in Python), on
index expressions where that makes sense (ceildiv, max, ...) and on runtime
scalars (emits `math`/`arith` ops).
"""

from __future__ import annotations

import builtins
import math as _pymath

from ..frontend import state
from ..frontend.values import (IndexExpr, Scalar, binary, cast, is_runtime, select,
                               to_scalar, _unwrap_ref)
from . import dtypes as dt


def _runtime(*xs) -> bool:
    return any(is_runtime(x) for x in xs)


def _unary_math(name: str, py_fn, op_name: str, doc: str):
    def fn(x):
        x = _unwrap_ref(x)
        if not _runtime(x):
            return py_fn(x)
        from ..dialects import math as mmath

        s = to_scalar(x)
        if not s.dtype.is_float:
            s = to_scalar(s, dt.float32)
        return Scalar(getattr(mmath, op_name)(s.value).result, s.dtype)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


exp = _unary_math("exp", _pymath.exp, "ExpOp", "e**x")
exp2 = _unary_math("exp2", lambda x: 2.0 ** x, "Exp2Op", "2**x")
log = _unary_math("log", _pymath.log, "LogOp", "natural logarithm")
log2 = _unary_math("log2", _pymath.log2, "Log2Op", "base-2 logarithm")
sqrt = _unary_math("sqrt", _pymath.sqrt, "SqrtOp", "square root")
rsqrt = _unary_math("rsqrt", lambda x: 1.0 / _pymath.sqrt(x), "RsqrtOp", "1 / sqrt(x)")
tanh = _unary_math("tanh", _pymath.tanh, "TanhOp", "hyperbolic tangent")
sin = _unary_math("sin", _pymath.sin, "SinOp", "sine")
cos = _unary_math("cos", _pymath.cos, "CosOp", "cosine")
floor = _unary_math("floor", _pymath.floor, "FloorOp", "round toward -inf")
ceil = _unary_math("ceil", _pymath.ceil, "CeilOp", "round toward +inf")
erf = _unary_math("erf", _pymath.erf, "ErfOp", "error function")


def sigmoid(x):
    """1 / (1 + exp(-x))."""
    return binary("/", 1.0, binary("+", 1.0, exp(binary("*", -1.0, x))))


def abs(x):  # noqa: A001 (TileLang's name)
    """|x|."""
    x = _unwrap_ref(x)
    if not _runtime(x):
        return builtins.abs(x)
    from ..dialects import math as mmath

    s = to_scalar(x)
    if s.dtype.is_float:
        return Scalar(mmath.AbsFOp(s.value).result, s.dtype)
    return Scalar(mmath.AbsIOp(s.value).result, s.dtype)


def _minmax(op: str, a, b):
    a, b = _unwrap_ref(a), _unwrap_ref(b)
    if not _runtime(a, b):
        return (builtins.max if op == "max" else builtins.min)(a, b)
    ia, ib = IndexExpr.lift(a), IndexExpr.lift(b)
    if ia is not None and ib is not None:
        return ia.minmax(ib, op)
    c = binary("-", a, b)  # promotes both to a common dtype
    from ..dialects import arith

    dtype = c.dtype
    sa, sb = to_scalar(a, dtype), to_scalar(b, dtype)
    if dtype.is_float:
        fn = arith.MaxNumFOp if op == "max" else arith.MinNumFOp
    elif dtype.is_unsigned:
        fn = arith.MaxUIOp if op == "max" else arith.MinUIOp
    else:
        fn = arith.MaxSIOp if op == "max" else arith.MinSIOp
    return Scalar(fn(sa.value, sb.value).result, dtype)


def max(a, b, *rest):  # noqa: A001
    """The larger value (NaN-ignoring for floats)."""
    r = _minmax("max", a, b)
    for x in rest:
        r = _minmax("max", r, x)
    return r


def min(a, b, *rest):  # noqa: A001
    """The smaller value (NaN-ignoring for floats)."""
    r = _minmax("min", a, b)
    for x in rest:
        r = _minmax("min", r, x)
    return r


def pow(a, b):  # noqa: A001
    return binary("**", a, b)


def ceildiv(a, b):
    """ceil(a / b) on integers."""
    return binary("//", binary("+", a, binary("-", b, 1)), b)


def floordiv(a, b):
    return binary("//", a, b)


def floormod(a, b):
    return binary("%", a, b)


def truncdiv(a, b):
    """Integer division rounding toward zero (C semantics)."""
    a, b = _unwrap_ref(a), _unwrap_ref(b)
    if not _runtime(a, b):
        return int(a / b)
    from ..dialects import arith

    c = binary("-", a, b)
    sa, sb = to_scalar(a, c.dtype), to_scalar(b, c.dtype)
    return Scalar(arith.DivSIOp(sa.value, sb.value).result, c.dtype)


def if_then_else(cond, then_value, else_value):
    """cond ? then_value : else_value (both sides are evaluated)."""
    return select(cond, then_value, else_value)


def infinity(dtype):
    """+inf of a float dtype."""
    dtype = dt.as_dtype(dtype)
    if not state.active():
        return float("inf")
    return to_scalar(float("inf"), dtype)


def max_value(dtype):
    """The largest finite value of `dtype`."""
    import numpy as np

    dtype = dt.as_dtype(dtype)
    v = float(np.finfo(dt.to_numpy(dtype)).max) if dtype.is_float else \
        (2 ** (dtype.bits - 1) - 1 if dtype.kind == "int" else 2 ** dtype.bits - 1)
    return to_scalar(v, dtype) if state.active() else v


def reinterpret(x, dtype):
    """T.reinterpret(x, dtype): the bits of the runtime scalar `x` read as a
    value of `dtype` (same width; `arith.bitcast`), e.g. an int32 built with
    integer operations reinterpreted as float32."""
    from ..dialects import arith

    dtype = dt.as_dtype(dtype)
    s = to_scalar(_unwrap_ref(x))
    if s.dtype.bits != dtype.bits or s.dtype.is_bool or dtype.is_bool or \
            "index" in (s.dtype.kind, dtype.kind):
        raise TypeError(f"T.reinterpret: {s.dtype} and {dtype} differ in width "
                        f"(or one has none)")
    if s.dtype == dtype:
        return s
    return Scalar(arith.BitcastOp(dtype.ir_type(), s.value).result, dtype)


def min_value(dtype):
    """The smallest finite value of `dtype`."""
    import numpy as np

    dtype = dt.as_dtype(dtype)
    v = float(np.finfo(dt.to_numpy(dtype)).min) if dtype.is_float else \
        (-(2 ** (dtype.bits - 1)) if dtype.kind == "int" else 0)
    return to_scalar(v, dtype) if state.active() else v


__all__ = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sin", "cos", "floor",
           "ceil", "erf", "sigmoid", "abs", "max", "min", "pow", "ceildiv", "floordiv",
           "floormod", "truncdiv", "if_then_else", "infinity", "max_value", "min_value",
           "cast", "reinterpret"]
