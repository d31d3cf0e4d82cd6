"""Scalar math of tile programs.

Each function works on compile-time Python numbers (evaluated in Python), on
index expressions where that makes sense (ceildiv, max, ...) and on runtime
scalars (emits `math`/`arith` ops).
"""

from __future__ import annotations

import builtins
import math as _pymath

from ..base.signature import SymExpr, sym_apply
from ..base import dtypes as dt
from . import state
from .values import (IndexExpr, Scalar, binary, cast, ir_type, is_runtime, select,
                               to_scalar, _unwrap_ref)


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
    if isinstance(a, SymExpr) or isinstance(b, SymExpr):  # sizes on the host
        return sym_apply(op, a, b)
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
    """a ** b (the power of two values, or of a value and a constant)."""
    return binary("**", a, b)


def ceildiv(a, b):
    """ceil(a / b) on integers."""
    return binary("//", binary("+", a, binary("-", b, 1)), b)


def floordiv(a, b):
    """a // b: division rounding toward minus infinity (Python semantics)."""
    return binary("//", a, b)


def floormod(a, b):
    """a % b with the sign of b (Python semantics; floordiv's remainder)."""
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


def Select(condition, true_value, false_value, span=None):  # noqa: N802 (TVM's name)
    """TVM's select: `condition ? true_value : false_value`, both values
    evaluated (T.if_then_else under its TIR name)."""
    return select(condition, true_value, false_value)


def align_up(x, y):
    """`x` rounded up to a multiple of `y`: T.ceildiv(x, y) * y."""
    return binary("*", ceildiv(x, y), y)


def index_to_coordinates(index, shape):
    """The row-major coordinates of flat `index` in an array of `shape`
    (the last coordinate fastest): [index // (...) % shape[0], ...,
    index % shape[-1]]."""
    coordinates = []
    for extent in reversed(list(shape)):
        coordinates.append(binary("%", index, extent))
        index = binary("//", index, extent)
    coordinates.reverse()
    return coordinates


def linear_index(*args):
    """The flat index of coordinates: `linear_index(i, j, ..., s_j, ...)`
    takes n coordinates then n - 1 strides (i * s_j + j, ...); with one
    argument it is that argument."""
    n = (len(args) + 1) // 2
    if len(args) != 2 * n - 1:
        raise TypeError(f"T.linear_index takes n coordinates and n - 1 strides, got "
                        f"{len(args)} arguments")
    coords, strides = args[:n], args[n:]
    linear = coords[0]
    for c, stride in zip(coords[1:], strides):
        linear = binary("+", binary("*", linear, stride), c)
    return linear


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

    if str(dtype) == "handle":  # TVM's opaque handle (a reduce scope's argument)
        from .tir import Handle, constant_int

        return Handle(constant_int(_unwrap_ref(x)))
    dtype = dt.as_dtype(dtype)
    from .values import Vector, _vector_ref

    vector = _vector_ref(_unwrap_ref(x))
    if isinstance(vector, Vector) or dtype.lanes > 1:
        # Vectors: the same bits in lanes of the other type (uint32x2 as
        # float32x2, uint32 as float16x2), lane 0 the lowest.
        from .loads import _as_value, regroup_bits

        lanes = regroup_bits(vector, dtype.element, "T.reinterpret")
        if len(lanes) != dtype.lanes:
            raise TypeError(f"T.reinterpret: {len(lanes)} lanes of {dtype.element} in the value, "
                            f"{dtype} asks for {dtype.lanes}")
        return _as_value(lanes)
    s = to_scalar(_unwrap_ref(x))
    if (s.dtype.pack > 1 and dtype.bits == 8 and dtype.is_int) or \
            (dtype.pack > 1 and s.dtype.bits == 8 and s.dtype.is_int):
        # A 4-bit value's byte (CUDA stores one in a byte, the code in the low
        # bits) and back.
        from ..dialects import arith

        if s.dtype.pack > 1:
            return Scalar(arith.ExtUIOp(ir_type(dtype), s.value).result, dtype)
        return Scalar(arith.TruncIOp(ir_type(dtype), s.value).result, dtype)
    if s.dtype.bits != dtype.bits or s.dtype.is_bool or dtype.is_bool or \
            "index" in (s.dtype.kind, dtype.kind):
        raise TypeError(f"T.reinterpret: {s.dtype} and {dtype} differ in width "
                        f"(or one has none)")
    if s.dtype == dtype:
        return s
    return Scalar(arith.BitcastOp(ir_type(dtype), s.value).result, dtype)


def _half(dtype, what):
    """The 16-bit float type of a pair operation."""
    half = dt.as_dtype(dtype)
    if half.name not in ("float16", "bfloat16"):
        raise TypeError(f"T.{what}: pairs of float16 or bfloat16, not {half}")
    return half


def _pair_word(x, what):
    """The int32 scalar of a pair word: a runtime int32, or a Python int
    (its 32 bits, as a constant)."""
    x = _unwrap_ref(x)
    if not is_runtime(x):
        if not isinstance(x, int) or isinstance(x, bool):
            raise TypeError(f"T.{what}: a constant operand must be the int bits of a pair, "
                            f"got {x!r}")
        x = x & 0xFFFFFFFF
        x = to_scalar(x - (1 << 32) if x >= 1 << 31 else x, dt.int32)
    s = to_scalar(x)
    if s.dtype.bits != 32 or s.dtype.kind not in ("int", "uint"):
        raise TypeError(f"T.{what}: operands are int32 words holding two 16-bit floats, "
                        f"got {s.dtype}")
    return s


def _pair_op(name: str, arity: int, doc: str):
    def fn(*xs, dtype="float16"):
        from ..dialects import arith, vector
        from ..dialects import math as mmath
        from .. import ir

        if len(xs) != arity:
            raise TypeError(f"T.{name} takes {arity} pair words, got {len(xs)}")
        half = _half(dtype, name)
        words = [_pair_word(x, name) for x in xs]
        i32 = ir_type(dt.int32)
        one = ir.VectorType.get([1], i32)
        two = ir.VectorType.get([2], ir_type(half))
        vals = [vector.BitCastOp(two, vector.BroadcastOp(one, w.value).result).result
                for w in words]
        if name == "hfma2":
            r = mmath.FmaOp(*vals).result
        else:
            op = {"hadd2": arith.AddFOp, "hsub2": arith.SubFOp, "hmul2": arith.MulFOp}[name]
            r = op(*vals).result
        r = vector.BitCastOp(one, r).result
        return Scalar(vector.ExtractOp(r, [], [0]).result, words[0].dtype)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


hadd2 = _pair_op("hadd2", 2, "T.hadd2(a, b, dtype='float16'): the two 16-bit floats packed "
                 "in int32 `a` plus those of `b`, lane by lane (low half, high half), "
                 "packed again (one add.f16x2); constants are the int bits of a pair")
hsub2 = _pair_op("hsub2", 2, "T.hsub2(a, b): lane-wise a - b on pairs packed in int32 words")
hmul2 = _pair_op("hmul2", 2, "T.hmul2(a, b): lane-wise a * b on pairs packed in int32 words")
hfma2 = _pair_op("hfma2", 3, "T.hfma2(a, b, c): lane-wise a * b + c, one rounding (fma.rn."
                 "f16x2), on pairs packed in int32 words")


def unpack2(x, lane, dtype="float16"):
    """T.unpack2(word, lane, dtype='float16'): lane 0 (bits 0..15) or 1 (bits
    16..31) of an int32 word holding two 16-bit floats, as a `dtype` scalar;
    the lane may be an index expression of the loop (`j % 2`)."""
    from ..dialects import arith

    half = _half(dtype, "unpack2")
    w = _pair_word(x, "unpack2")
    if isinstance(lane, int):
        if lane not in (0, 1):
            raise ValueError(f"T.unpack2: lane is 0 or 1, got {lane!r}")
        if lane:
            w = binary(">>", w, 16)
    else:  # an index expression (j % 2): the shift is folded per element
        w = binary(">>", w, binary("*", cast(lane, dt.int32), 16))
    h = Scalar(arith.TruncIOp(ir_type(dt.int16), to_scalar(w).value).result, dt.int16)
    return Scalar(arith.BitcastOp(ir_type(half), h.value).result, half)


def pack2(lo, hi, dtype="float16"):
    """T.pack2(lo, hi, dtype='float16'): an int32 word holding `lo` in bits
    0..15 and `hi` in bits 16..31, both rounded to `dtype` (float16 or
    bfloat16); the word the pair operations (T.hfma2, ...) take."""
    from ..dialects import arith

    half = _half(dtype, "pack2")
    i32 = ir_type(dt.int32)
    parts = []
    for v in (lo, hi):
        h = cast(to_scalar(_unwrap_ref(v), half), half)
        bits = arith.BitcastOp(ir_type(dt.int16), to_scalar(h).value).result
        parts.append(Scalar(arith.ExtUIOp(i32, bits).result, dt.int32))
    return binary("|", parts[0], binary("<<", parts[1], 16))


def Cast(dtype, value):  # noqa: N802 (TileLang's name)
    """T.Cast(dtype, x): T.cast with the dtype first (TVM's spelling)."""
    return cast(value, dtype)


def clamp(x, min_val, max_val):
    """min(max(x, min_val), max_val)."""
    return min(max(x, min_val), max_val)


def shift_left(x, y):
    """x << y on integers."""
    return binary("<<", x, y)


def shift_right(x, y):
    """x >> y on integers (arithmetic for signed, logical for unsigned)."""
    return binary(">>", x, y)


def bitwise_and(x, y):
    """x & y on integers, bit by bit."""
    return binary("&", x, y)


def bitwise_or(x, y):
    """x | y on integers, bit by bit."""
    return binary("|", x, y)


def bitwise_xor(x, y):
    """x ^ y on integers, bit by bit."""
    return binary("^", x, y)


def bitwise_not(x):
    """~x on integers, bit by bit."""
    from .values import unary

    return unary("~", x)


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
           "cast", "Cast", "clamp", "shift_left", "shift_right", "bitwise_and", "bitwise_or",
           "bitwise_xor", "bitwise_not", "reinterpret", "Select", "align_up",
           "index_to_coordinates", "linear_index", "hadd2", "hsub2", "hmul2", "hfma2", "pack2", "unpack2"]
