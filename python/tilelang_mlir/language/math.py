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
from .values import (FloatImm, IndexExpr, Scalar, binary, cast as _cast, constant, ir_type, is_float8,
                     is_runtime, promote, select, to_computable, to_scalar, _common_dtype,
                     _unwrap_ref)


def _runtime(*xs) -> bool:
    return any(is_runtime(x) for x in xs)


def _host(*xs) -> bool:
    """Operands of an expression made outside a program (host_expr.py): a
    tvm.tir.Var, a symbolic size, or such an expression."""
    from ..base.signature import SymbolicDim
    from .host_expr import any_host

    return not state.active() and (any_host(xs) or any(isinstance(x, SymbolicDim) for x in xs))


def _defer(name: str, fn, *xs):
    from .host_expr import defer

    return defer(name, fn, xs, {}, state.outside_error())


def _float_operand(x, what: str) -> Scalar:
    """A runtime operand of a float function: integers convert to float32
    (as TVM's math does), float8 widens to float32 (and the result is
    rounded back by the caller, see _float_result)."""
    s = to_scalar(x)
    if not s.dtype.is_float:
        return to_scalar(s, dt.float32)
    if is_float8(s.dtype):
        return to_scalar(s, dt.float32)
    return s


def _float_result(value, of: Scalar, x) -> Scalar:
    """The result `value` (computed in `of`'s dtype) in the dtype of the
    original operand `x` (float8 rounds back)."""
    orig = to_scalar(x).dtype
    if orig.is_float and is_float8(orig):
        return to_scalar(Scalar(value, of.dtype), orig)
    return Scalar(value, of.dtype)


_AFN = "#arith.fastmath<afn>"


def _fastmath(fast: bool) -> dict:
    if not fast:
        return {}
    from .. import ir

    return {"fastmath": ir.Attribute.parse(_AFN)}


def _unary_math(name: str, py_fn, op_name: str, doc: str, fast: bool = False):
    def fn(x):
        x = _unwrap_ref(x)
        if not _runtime(x):
            if _host(x):
                return _defer(name, fn, x)
            return py_fn(x)
        from ..dialects import math as mmath

        if fast:
            _require_float(x, name)
        s = _float_operand(x, name)
        return _float_result(getattr(mmath, op_name)(s.value, **_fastmath(fast)).result, s, x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _require_float(x, name: str) -> None:
    """TileLang's fast-math functions take float operands only."""
    d = to_scalar(x).dtype
    if not d.is_float or is_float8(d):  # float16/bfloat16/float32/float64, as TileLang
        raise TypeError(f"T.{name} only supports floating-point inputs, but got {d}")


exp = _unary_math("exp", _pymath.exp, "ExpOp", "e**x")
exp2 = _unary_math("exp2", lambda x: 2.0 ** x, "Exp2Op", "2**x")
log = _unary_math("log", _pymath.log, "LogOp", "natural logarithm")
log2 = _unary_math("log2", _pymath.log2, "Log2Op", "base-2 logarithm")
log10 = _unary_math("log10", _pymath.log10, "Log10Op", "base-10 logarithm")
log1p = _unary_math("log1p", _pymath.log1p, "Log1pOp", "log(1 + x), accurate near 0")
sqrt = _unary_math("sqrt", _pymath.sqrt, "SqrtOp", "square root")
rsqrt = _unary_math("rsqrt", lambda x: 1.0 / _pymath.sqrt(x), "RsqrtOp", "1 / sqrt(x)")
tanh = _unary_math("tanh", _pymath.tanh, "TanhOp", "hyperbolic tangent")
sin = _unary_math("sin", _pymath.sin, "SinOp", "sine")
cos = _unary_math("cos", _pymath.cos, "CosOp", "cosine")
tan = _unary_math("tan", _pymath.tan, "TanOp", "tangent")
sinh = _unary_math("sinh", _pymath.sinh, "SinhOp", "hyperbolic sine")
cosh = _unary_math("cosh", _pymath.cosh, "CoshOp", "hyperbolic cosine")
asin = _unary_math("asin", _pymath.asin, "AsinOp", "arcsine")
acos = _unary_math("acos", _pymath.acos, "AcosOp", "arccosine")
atan = _unary_math("atan", _pymath.atan, "AtanOp", "arctangent")
asinh = _unary_math("asinh", _pymath.asinh, "AsinhOp", "inverse hyperbolic sine")
acosh = _unary_math("acosh", _pymath.acosh, "AcoshOp", "inverse hyperbolic cosine")
atanh = _unary_math("atanh", _pymath.atanh, "AtanhOp", "inverse hyperbolic tangent")
floor = _unary_math("floor", _pymath.floor, "FloorOp", "round toward -inf")
ceil = _unary_math("ceil", _pymath.ceil, "CeilOp", "round toward +inf")
trunc = _unary_math("trunc", _pymath.trunc, "TruncOp", "round toward zero")
nearbyint = _unary_math("nearbyint", lambda x: float(round(x)), "RoundEvenOp",
                        "round to the nearest integer, ties to even (C's nearbyint in the "
                        "default rounding mode)")
erf = _unary_math("erf", _pymath.erf, "ErfOp", "error function")

# TileLang's fast-math functions (CUDA's __expf, __logf, ...; float operands
# only). On GPUs they use the approximate instructions (ex2.approx,
# lg2.approx, sin.approx, cos.approx), as T.exp and kin already do in this
# compiler; on the CPU they compute the accurate function (within the
# approximations' error of what a GPU gives).
__exp = _unary_math("__exp", _pymath.exp, "ExpOp", "e**x, fast (CUDA's __expf: "
                    "ex2.approx on NVIDIA GPUs)", fast=True)
__log = _unary_math("__log", _pymath.log, "LogOp", "natural logarithm, fast (CUDA's "
                    "__logf: lg2.approx)", fast=True)
__log2 = _unary_math("__log2", _pymath.log2, "Log2Op", "base-2 logarithm, fast (CUDA's "
                     "__log2f: lg2.approx)", fast=True)
__sin = _unary_math("__sin", _pymath.sin, "SinOp", "sine, fast (CUDA's __sinf: "
                    "sin.approx)", fast=True)
__cos = _unary_math("__cos", _pymath.cos, "CosOp", "cosine, fast (CUDA's __cosf: "
                    "cos.approx)", fast=True)


def _scaled_exp2(x, log2_base: float, fast: bool, name: str):
    """base**x as 2**(x * log2(base)), the product split in two parts (its
    rounding error kept: 2**hi * (1 + lo * ln 2)) so that large |x| keep
    their accuracy."""
    from ..dialects import arith
    from ..dialects import math as mmath

    x = _unwrap_ref(x)
    if not _runtime(x):
        if _host(x):
            return _defer(name, globals()[name], x)
        return 2.0 ** (x * log2_base)
    if fast:
        _require_float(x, name)
    s = _float_operand(x, name)
    d = s.dtype if s.dtype.bits >= 32 else dt.float32
    v = to_scalar(s, d).value
    c = to_scalar(log2_base, d).value
    c_lo = to_scalar(log2_base - float(_np_cast(log2_base, d)), d).value
    hi = arith.MulFOp(v, c).result
    lo = arith.AddFOp(mmath.FmaOp(v, c, arith.NegFOp(hi).result).result,
                      arith.MulFOp(v, c_lo).result).result
    p = mmath.Exp2Op(hi, **_fastmath(fast)).result
    corr = mmath.FmaOp(lo, to_scalar(_pymath.log(2.0), d).value, to_scalar(1.0, d).value).result
    r = Scalar(arith.MulFOp(p, corr).result, d)
    return _float_result(to_scalar(r, s.dtype).value, s, x)


def _np_cast(v: float, d) -> float:
    import numpy as np

    return float(np.float32(v)) if d.bits == 32 else float(v)


def exp10(x):
    """10**x."""
    return _scaled_exp2(x, _pymath.log2(10.0), False, "exp10")


def __exp10(x):
    """10**x, fast (CUDA's __exp10f: ex2.approx of x * log2(10))."""
    return _scaled_exp2(x, _pymath.log2(10.0), True, "__exp10")


def __log10(x):
    """Base-10 logarithm, fast (CUDA's __log10f: lg2.approx(x) * log10(2))."""
    x = _unwrap_ref(x)
    if not _runtime(x):
        if _host(x):
            return _defer("__log10", __log10, x)
        return _pymath.log10(x)
    _require_float(x, "__log10")
    lg = __log2(x)  # the product in x's dtype, as TileLang's call of it
    return binary("*", lg, to_scalar(_pymath.log10(2.0), lg.dtype))


def __tan(x):
    """Tangent, fast (CUDA's __tanf: __sinf(x) / __cosf(x))."""
    x = _unwrap_ref(x)
    if not _runtime(x):
        if _host(x):
            return _defer("__tan", __tan, x)
        return _pymath.tan(x)
    _require_float(x, "__tan")
    return binary("/", __sin(x), __cos(x))


def fast_rcp(x):
    """1 / x, fast (TileLang's tl::fast_rcp: rcp.approx.ftz.f32 on NVIDIA
    GPUs; the exact quotient on the CPU)."""
    from ..dialects import arith

    x = _unwrap_ref(x)
    if not _runtime(x):
        return 1.0 / x
    s = _float_operand(x, "fast_rcp")
    one = to_scalar(1.0, s.dtype).value
    return _float_result(arith.DivFOp(one, s.value, **_fastmath(True)).result, s, x)


def round(x, rounding_mode="ties-to-even"):  # noqa: A001 (TileLang's name)
    """T.round(x, rounding_mode="ties-to-even"): to the nearest integer,
    ties to even (the default; C's nearbyint) or, with
    "ties-away-from-zero", away from zero (C's round)."""
    if rounding_mode is None:
        rounding_mode = "ties-to-even"
    if rounding_mode not in ("ties-to-even", "ties-away-from-zero"):
        raise ValueError(f"Unsupported T.round rounding_mode {rounding_mode!r}; expected "
                         "'ties-to-even' or 'ties-away-from-zero'.")
    x = _unwrap_ref(x)
    if rounding_mode == "ties-to-even":
        return nearbyint(x)
    if not _runtime(x):
        return float(_pymath.copysign(_pymath.floor(abs(x) + 0.5), x))
    from ..dialects import math as mmath

    s = _float_operand(x, "round")
    return _float_result(mmath.RoundOp(s.value).result, s, x)


def _binary_float(name: str, a, b, emit):
    """A two-operand float function: both operands in their common dtype
    (integers as float32, float8 through float32 and back)."""
    a, b = _unwrap_ref(a), _unwrap_ref(b)
    d = _common_dtype(a, b)
    if not d.is_float:
        d = dt.float32
    w = dt.float32 if is_float8(d) else d
    sa, sb = to_scalar(to_scalar(a, d), w), to_scalar(to_scalar(b, d), w)
    r = Scalar(emit(sa.value, sb.value, w), w)
    return to_scalar(r, d)


def atan2(y, x):
    """The angle of the point (x, y): arctangent of y / x in the quadrant
    of (x, y)."""
    if not _runtime(_unwrap_ref(y), _unwrap_ref(x)):
        return _pymath.atan2(y, x)
    from ..dialects import math as mmath

    return _binary_float("atan2", y, x, lambda a, b, d: mmath.Atan2Op(a, b).result)


def fmod(x, y):
    """The remainder of x / y truncated toward zero (C's fmod: the sign of
    x)."""
    if not _runtime(_unwrap_ref(x), _unwrap_ref(y)):
        return _pymath.fmod(x, y)
    from ..dialects import arith

    return _binary_float("fmod", x, y, lambda a, b, d: arith.RemFOp(a, b).result)


def copysign(x, y):
    """|x| with the sign of y."""
    if not _runtime(_unwrap_ref(x), _unwrap_ref(y)):
        return _pymath.copysign(x, y)
    from ..dialects import math as mmath

    return _binary_float("copysign", x, y, lambda a, b, d: mmath.CopySignOp(a, b).result)


def hypot(x, y):
    """sqrt(x*x + y*y) without overflow or underflow on the way (in float64
    for narrower types; scaled by the larger magnitude for float64)."""
    if not _runtime(_unwrap_ref(x), _unwrap_ref(y)):
        return _pymath.hypot(x, y)
    from ..dialects import arith
    from ..dialects import math as mmath

    def emit(a, b, d):
        if d.bits < 64:
            a64, b64 = (to_scalar(Scalar(v, d), dt.float64).value for v in (a, b))
            r = mmath.SqrtOp(mmath.FmaOp(a64, a64, arith.MulFOp(b64, b64).result).result).result
            return to_scalar(Scalar(r, dt.float64), d).value
        aa, ab = mmath.AbsFOp(a).result, mmath.AbsFOp(b).result
        hi, lo = arith.MaximumFOp(aa, ab).result, arith.MinimumFOp(aa, ab).result
        q = arith.DivFOp(lo, hi).result
        r = arith.MulFOp(hi, mmath.SqrtOp(mmath.FmaOp(q, q, to_scalar(1.0, d).value).result
                                          ).result).result
        zero = to_scalar(0.0, d).value
        inf = to_scalar(float("inf"), d).value
        r = arith.SelectOp(arith.CmpFOp(arith.CmpFPredicate.OEQ, hi, zero).result, zero,
                           r).result
        either_inf = arith.OrIOp(arith.CmpFOp(arith.CmpFPredicate.OEQ, aa, inf).result,
                                 arith.CmpFOp(arith.CmpFPredicate.OEQ, ab, inf).result).result
        return arith.SelectOp(either_inf, inf, r).result

    return _binary_float("hypot", x, y, emit)


def ldexp(x, exp):
    """x * 2**exp for an integer `exp`, rounded once (float32 and narrower
    through float64, where the product is exact)."""
    x, exp = _unwrap_ref(x), _unwrap_ref(exp)
    if not _runtime(x, exp):
        return _pymath.ldexp(x, int(exp))
    from ..dialects import arith

    s = _float_operand(x, "ldexp")
    e = to_scalar(exp, dt.int64)

    def pow2(k):  # 2**k as float64 bits, k clamped to the normal range
        lo, hi = constant(-1022, dt.int64), constant(1023, dt.int64)
        k = arith.MaxSIOp(arith.MinSIOp(k, hi).result, lo).result
        bits = arith.ShLIOp(arith.AddIOp(k, constant(1023, dt.int64)).result,
                            constant(52, dt.int64)).result
        return k, arith.BitcastOp(ir_type(dt.float64), bits).result

    x64 = to_scalar(s, dt.float64).value
    k1, p1 = pow2(e.value)
    r = arith.MulFOp(x64, p1).result
    if s.dtype.bits == 64:  # the rest of the exponent, a second (rarely inexact) step
        _, p2 = pow2(arith.SubIOp(e.value, k1).result)
        r = arith.MulFOp(r, p2).result
    return _float_result(to_scalar(Scalar(r, dt.float64), s.dtype).value, s, x)


def nextafter(x, y):
    """The next float after x in the direction of y (y when they are equal,
    NaN when either is)."""
    x, y = _unwrap_ref(x), _unwrap_ref(y)
    if not _runtime(x, y):
        return _pymath.nextafter(x, y)
    from ..dialects import arith

    d = _common_dtype(x, y)
    if not d.is_float or is_float8(d):
        raise TypeError(f"T.nextafter takes float16, bfloat16, float32 or float64 values, "
                        f"got {d}")
    sx, sy = to_scalar(x, d).value, to_scalar(y, d).value
    it = dt.DType(f"int{d.bits}", f"i{d.bits}", d.bits, "int")
    bits = arith.BitcastOp(ir_type(it), sx).result
    one = constant(1, it)
    zero = to_scalar(0.0, d).value
    up = arith.CmpFOp(arith.CmpFPredicate.OGT, sy, sx).result
    pos = arith.CmpFOp(arith.CmpFPredicate.OGT, sx, zero).result
    # Moving up from a positive value (or down from a negative one) grows
    # the magnitude bits; the other way shrinks them.
    grow = arith.CmpIOp(arith.CmpIPredicate.eq, up, pos).result
    stepped = arith.SelectOp(grow, arith.AddIOp(bits, one).result,
                             arith.SubIOp(bits, one).result).result
    tiny = arith.SelectOp(up, constant(1, it), constant(-(1 << (d.bits - 1)) | 1, it)).result
    is_zero = arith.CmpFOp(arith.CmpFPredicate.OEQ, sx, zero).result
    stepped = arith.SelectOp(is_zero, tiny, stepped).result
    r = arith.BitcastOp(ir_type(d), stepped).result
    same = arith.CmpFOp(arith.CmpFPredicate.OEQ, sx, sy).result
    r = arith.SelectOp(same, sy, r).result
    nan = arith.CmpFOp(arith.CmpFPredicate.UNO, sx, sy).result
    r = arith.SelectOp(nan, arith.AddFOp(sx, sy).result, r).result
    return Scalar(r, d)


def _float_class(name: str, doc: str, py_fn, pred):
    def fn(x):
        x = _unwrap_ref(x)
        if not _runtime(x):
            return py_fn(float(x))
        s = to_scalar(x)
        if not s.dtype.is_float:  # integers are finite numbers
            return to_scalar(name == "isfinite", dt.boolean)
        s = to_computable(s, s.dtype)
        return Scalar(pred(s), dt.boolean)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def _abs_vs_inf(s, predicate):
    from ..dialects import arith
    from ..dialects import math as mmath

    inf = to_scalar(float("inf"), s.dtype).value
    return arith.CmpFOp(getattr(arith.CmpFPredicate, predicate),
                        mmath.AbsFOp(s.value).result, inf).result


def _unordered(s):
    from ..dialects import arith

    return arith.CmpFOp(arith.CmpFPredicate.UNO, s.value, s.value).result


isnan = _float_class("isnan", "Whether x is NaN (a bool; false for integers).", _pymath.isnan,
                     _unordered)
isinf = _float_class("isinf", "Whether x is +inf or -inf (a bool; false for integers).",
                     _pymath.isinf, lambda s: _abs_vs_inf(s, "OEQ"))
isfinite = _float_class("isfinite", "Whether x is neither infinite nor NaN (a bool; true for "
                        "integers).", _pymath.isfinite, lambda s: _abs_vs_inf(s, "ONE"))


def _int_bits(name: str, op_name: str, doc: str, result_int32: bool):
    def fn(x):
        x = _unwrap_ref(x)
        s = to_scalar(x)
        if not s.dtype.is_int:
            raise TypeError(f"T.{name} takes an integer value, got {s.dtype}")
        from ..dialects import math as mmath

        r = Scalar(getattr(mmath, op_name)(s.value).result, s.dtype)
        return to_scalar(r, dt.int32) if result_int32 else r

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


clz = _int_bits("clz", "CountLeadingZerosOp", "The number of leading zero bits of an integer "
                "(an int32, as TVM's clz).", True)
popcount = _int_bits("popcount", "CtPopOp", "The number of one bits of an integer (its dtype).",
                     False)


def truncmod(a, b):
    """The remainder of a / b truncated toward zero (C's %: the sign of a);
    fmod for floats."""
    a, b = _unwrap_ref(a), _unwrap_ref(b)
    if not _runtime(a, b):
        return _pymath.fmod(a, b) if isinstance(a, float) or isinstance(b, float) else \
            int(_pymath.fmod(a, b))
    from ..dialects import arith

    d = _common_dtype(a, b)
    if d.is_float:
        return fmod(a, b)
    sa, sb = to_scalar(a, d), to_scalar(b, d)
    op = arith.RemUIOp if d.is_unsigned else arith.RemSIOp
    return Scalar(op(sa.value, sb.value).result, d)


def sigmoid(x):
    """1 / (1 + exp(-x)), in x's float dtype (TVM's tir.sigmoid; integers in
    float32)."""
    x = _unwrap_ref(x)
    if not _runtime(x):  # a number, or an expression of the host
        return binary("/", 1.0, binary("+", 1.0, exp(binary("*", -1.0, x))))
    d = to_scalar(x).dtype
    d = d if d.is_float else dt.float32
    one = to_scalar(1.0, d)
    return binary("/", one, binary("+", one, exp(binary("*", to_scalar(-1.0, d), x))))


def abs(x):  # noqa: A001 (TileLang's name)
    """|x|."""
    x = _unwrap_ref(x)
    if not _runtime(x):
        return builtins.abs(x)
    from ..dialects import math as mmath

    s = to_scalar(x)
    if s.dtype.is_float:
        w = to_computable(s, s.dtype)
        return to_scalar(Scalar(mmath.AbsFOp(w.value).result, w.dtype), s.dtype)
    if s.dtype.is_unsigned or s.dtype.is_bool:
        return s
    return Scalar(mmath.AbsIOp(s.value).result, s.dtype)


def fabs(x):
    """|x| (TVM's name for floats; T.abs)."""
    return abs(x)


def _minmax(op: str, a, b):
    a, b = _unwrap_ref(a), _unwrap_ref(b)
    if isinstance(a, SymExpr) or isinstance(b, SymExpr):  # sizes on the host
        return sym_apply(op, a, b)
    if not _runtime(a, b):
        return (builtins.max if op == "max" else builtins.min)(a, b)
    ia, ib = IndexExpr.lift(a), IndexExpr.lift(b)
    if ia is not None and ib is not None:
        return ia.minmax(ib, op)
    from ..dialects import arith

    dtype = _common_dtype(a, b)
    sa, sb = to_computable(a, dtype), to_computable(b, dtype)
    if dtype.is_float:
        # fmaxf / fminf: a NaN operand gives the other one (TileLang's
        # T.max / T.min; float8 compares in float32, exactly).
        fn = arith.MaxNumFOp if op == "max" else arith.MinNumFOp
        return to_scalar(Scalar(fn(sa.value, sb.value).result, sa.dtype), dtype)
    if dtype.is_unsigned:
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

    d = _common_dtype(a, b)
    sa, sb = to_scalar(a, d), to_scalar(b, d)
    return Scalar((arith.DivUIOp if d.is_unsigned else arith.DivSIOp)(sa.value, sb.value).result,
                  d)


def if_then_else(cond, then_value, else_value):
    """cond ? then_value : else_value. Written in a tile program, each side
    reads shared memory only where it is taken (TVM's if_then_else, the
    guard of out-of-bounds reads); its other values are computed on both
    sides (a select)."""
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
    dtype = dt.as_dtype(dtype)
    v = dt.float_limits(dtype)[0] if dtype.is_float else \
        (2 ** (dtype.bits - 1) - 1 if dtype.kind == "int" else 2 ** dtype.bits - 1)
    return _limit(v, dtype)


def _names_a_dtype(v) -> bool:
    if isinstance(v, dt.DType) or v is bool or v is int or v is float:
        return True
    if not isinstance(v, str):
        return False
    try:
        dt.as_dtype(v)
    except (TypeError, ValueError):
        return False
    return True


def reinterpret(x, dtype):
    """T.reinterpret(x, dtype): the bits of the runtime scalar `x` read as a
    value of `dtype` (same width; `arith.bitcast`), e.g. an int32 built with
    integer operations reinterpreted as float32."""
    from ..dialects import arith

    if _names_a_dtype(x) and not _names_a_dtype(dtype):
        # TVM's order, T.reinterpret(dtype, value) (tvm.tir.reinterpret),
        # which TileLang's T.reinterpret still takes
        x, dtype = dtype, x
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


_CAST_ROUNDING = ("", "rn", "rz", "rp", "rm", "rs")


def cast(value, dtype, round: str = "", sat: bool = True, rbits=None):  # noqa: A002
    """T.cast(x, dtype, round="", sat=True, rbits=None): converts a value
    (floats round to nearest even and saturate to the largest finite value of
    float8; floats to integers truncate and saturate, NaN gives 0). TileLang's
    PTX rounding hints round="rn" / "rz" / "rp" / "rm" are reserved there
    (no effect), and so here; sat=False only changes TileLang's stochastic
    rounding, round="rs" with rbits, an sm_100 instruction (cvt.rs) that
    this compiler does not target: refused. Python numbers stay Python
    numbers outside tile programs."""
    if round not in _CAST_ROUNDING:
        raise ValueError(f"Invalid round '{round}'. Must be one of: {sorted(_CAST_ROUNDING)}")
    if not isinstance(sat, bool):
        raise ValueError(f"Invalid sat '{sat}'. Must be a bool (True for satfinite, False for "
                         "no saturation)")
    if round == "rs" and rbits is None:
        raise ValueError("rbits is required when round='rs' (stochastic rounding)")
    if round != "rs" and rbits is not None:
        raise ValueError("rbits is only valid with round='rs' (stochastic rounding)")
    if round == "rs":
        from ..base.errors import TileLangError

        raise TileLangError("not supported by tilelang-mlir: T.cast(..., round='rs') "
                            "(stochastic rounding, PTX cvt.rs: an sm_100 instruction); cast "
                            "with the default rounding to nearest")
    return _cast(value, dtype)


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
    dtype = dt.as_dtype(dtype)
    v = dt.float_limits(dtype)[1] if dtype.is_float else \
        (-(2 ** (dtype.bits - 1)) if dtype.kind == "int" else 0)
    return _limit(v, dtype)


def _limit(v, dtype):
    """A type's limit in a program: a float type's is a constant that
    keeps its exact value in arithmetic with other constants (FloatImm)."""
    if not state.active():
        return v
    return FloatImm(v, dtype) if dtype.is_float else to_scalar(v, dtype)


__all__ = ["exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "tanh",
           "sin", "cos", "tan", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh",
           "atanh", "atan2", "floor", "ceil", "trunc", "nearbyint", "round", "erf", "sigmoid",
           "abs", "fabs", "max", "min", "pow", "ceildiv", "floordiv", "floormod", "truncdiv",
           "truncmod", "fmod", "hypot", "copysign", "ldexp", "nextafter", "isnan", "isinf",
           "isfinite", "clz", "popcount", "if_then_else", "infinity", "max_value",
           "min_value", "cast", "Cast", "clamp", "shift_left", "shift_right", "bitwise_and",
           "bitwise_or", "bitwise_xor", "bitwise_not", "reinterpret", "hadd2", "hsub2",
           "hmul2", "hfma2", "pack2", "unpack2", "__exp", "__exp10", "__log", "__log2",
           "__log10", "__sin", "__cos", "__tan", "fast_rcp", "Select", "align_up",
           "index_to_coordinates", "linear_index"]


# ---------------------------------------------------------------------------
# IEEE arithmetic in a chosen rounding direction (TileLang's ieee_*)
# ---------------------------------------------------------------------------

_ROUNDING_MODES = {"rn", "rz", "ru", "rd"}


def _validate_rounding_mode(rounding_mode) -> None:
    if isinstance(rounding_mode, str) and rounding_mode in _ROUNDING_MODES:
        return
    raise ValueError(f"Invalid rounding mode '{rounding_mode}'. Must be one of: "
                     f"{_ROUNDING_MODES}")


def _ieee(kind: str, name: str, arity: int, what: str, has_mode: bool = True):
    def fn(*args, rounding_mode="rn"):
        if has_mode and len(args) == arity + 1:
            *args, rounding_mode = args
        if len(args) != arity:
            raise TypeError(f"T.{name} takes {arity} operand(s)"
                            + (" and a rounding mode" if has_mode else "")
                            + f", got {len(args)} argument(s)")
        _validate_rounding_mode(rounding_mode)
        xs = [_unwrap_ref(x) for x in args]
        if not state.active():
            raise TypeError(f"T.{name} computes on values of a tile program; call it inside "
                            "a T.prim_func")
        from .. import ir
        from ..dialects import tile

        d = xs[0] if len(xs) == 1 else None
        d = to_scalar(d).dtype if d is not None else _common_dtype(xs[0], xs[1])
        if len(xs) == 3:
            d = promote(d, to_scalar(xs[2]).dtype) if is_runtime(xs[2]) else d
        if not d.is_float:
            d = dt.float32
        if is_float8(d):
            raise TypeError(f"T.{name} computes on float16, bfloat16, float32 or float64 "
                            f"values, got {d}")
        ops = [to_scalar(x, d).value for x in xs]
        r = tile.IEEEOp(ir_type(d), ir.Attribute.parse(f"#tile<ieee {kind}>"),
                        ir.Attribute.parse(f"#tile<rounding {rounding_mode}>"), ops).result
        return Scalar(r, d)

    fn.__name__ = fn.__qualname__ = name
    modes = ("; rounding_mode is 'rn' (to nearest even, the default), 'rz' (toward "
             "zero), 'ru' (toward +inf) or 'rd' (toward -inf); float16 and bfloat16 take "
             "'rn' only") if has_mode else " (rounded to nearest; not for float64, as in TileLang)"
    fn.__doc__ = (f"T.{name}(...): {what}, computed exactly and rounded once{modes}. On "
                  "NVIDIA GPUs the PTX instruction of that rounding (CUDA's __f*_r*); "
                  "elsewhere the nearest result stepped by its exact residual's sign.")
    return fn


ieee_add = _ieee("add", "ieee_add", 2, "x + y")
ieee_sub = _ieee("sub", "ieee_sub", 2, "x - y")
ieee_mul = _ieee("mul", "ieee_mul", 2, "x * y")
ieee_fmaf = _ieee("fma", "ieee_fmaf", 3, "x * y + z (fused)")
ieee_fdiv = _ieee("div", "ieee_fdiv", 2, "x / y")
ieee_frcp = _ieee("rcp", "ieee_frcp", 1, "1 / x")
ieee_fsqrt = _ieee("sqrt", "ieee_fsqrt", 1, "sqrt(x)")
ieee_frsqrt = _ieee("rsqrt", "ieee_frsqrt", 1, "1 / sqrt(x)", has_mode=False)

__all__ += ["ieee_add", "ieee_sub", "ieee_mul", "ieee_fmaf", "ieee_fdiv", "ieee_frcp",
            "ieee_fsqrt", "ieee_frsqrt"]


# -- packed x2 arithmetic ---------------------------------------------------------
# TileLang's add2 ... abs2: one operation on the two lanes of a float32x2,
# float16x2 or bfloat16x2 value (CUDA's __hadd2 / __hfma2 / __hmax2 ...
# families), lane by lane here, each lane rounded once as those are.

_PACKED_X2 = ("float32", "float16", "bfloat16")


def _packed_x2(name: str, *xs):
    from .values import Vector, _vector_ref

    lanes = []
    for x in xs:
        v = _vector_ref(_unwrap_ref(x))
        if not isinstance(v, Vector):
            raise TypeError(f"T.{name}: operands are float32x2, float16x2 or bfloat16x2 "
                            f"values, got {x!r}")
        d = v.dtype
        if d.lanes != 2 or d.element.name not in _PACKED_X2:
            raise ValueError(f"T.{name}: expected a dtype in float32x2, float16x2, "
                             f"bfloat16x2, got '{d}'")
        lanes.append(v)
    if len({str(v.dtype) for v in lanes}) > 1:
        raise ValueError(f"T.{name}: the packed operands must have the same dtype, got "
                         f"{[str(v.dtype) for v in lanes]}")
    return lanes


def _lanewise(name: str, fn, *xs):
    from .values import Vector

    if _host(*xs):
        return _defer(name, globals()[name], *xs)
    vs = _packed_x2(name, *xs)
    d = vs[0].dtype.element
    return Vector([to_scalar(fn(*(v.lanes[i] for v in vs)), d) for i in range(2)])


def add2(x, y):
    """T.add2(x, y): x + y on each lane of a float32x2, float16x2 or
    bfloat16x2 value (CUDA's __hadd2 / __fadd2)."""
    return _lanewise("add2", lambda a, b: binary("+", a, b), x, y)


def sub2(x, y):
    """T.sub2(x, y): x - y on each lane of a packed x2 value."""
    return _lanewise("sub2", lambda a, b: binary("-", a, b), x, y)


def mul2(x, y):
    """T.mul2(x, y): x * y on each lane of a packed x2 value."""
    return _lanewise("mul2", lambda a, b: binary("*", a, b), x, y)


def fma2(x, y, z):
    """T.fma2(x, y, z): x * y + z fused (rounded once) on each lane of a
    packed x2 value (CUDA's __hfma2)."""
    return _lanewise("fma2", lambda a, b, c: ieee_fmaf(a, b, c), x, y, z)


def max2(x, y):
    """T.max2(x, y): the larger of each lane (a NaN lane gives the other
    operand's, as __hmax2 / fmaxf)."""
    return _lanewise("max2", lambda a, b: max(a, b), x, y)


def min2(x, y):
    """T.min2(x, y): the smaller of each lane (NaN-ignoring, as __hmin2)."""
    return _lanewise("min2", lambda a, b: min(a, b), x, y)


def abs2(x):
    """T.abs2(x): |x| on each lane of a packed x2 value (__habs2)."""
    return _lanewise("abs2", lambda a: abs(a), x)


__all__ += ["add2", "sub2", "mul2", "fma2", "max2", "min2", "abs2"]
