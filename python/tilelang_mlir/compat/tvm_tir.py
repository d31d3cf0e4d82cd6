"""`tvm.tir` / `tvm.tirx` as TileLang programs use them on the host:
`const(value, dtype)`, `IntImm(dtype, value)`, `FloatImm(dtype, value)`,
`Var(name, dtype)` and the checks `isinstance(x, PrimExpr / IntImm /
FloatImm / Var / Call)`; `Shuffle` is T.Shuffle; the expression nodes
`Add` ... `GE`, `And`, `Or`, `Not` build the expression they name (also as
T.Add and so on, as TileLang's T re-exports them).

What they match: `PrimExpr` every value of a tile program (index
expressions, typed scalars, buffer elements, comparisons), the constants
made here and symbolic sizes; `IntImm` / `FloatImm` the constants made by
`const` / `IntImm` / `FloatImm` (Python ints and floats are not TVM
immediates, as in TVM); `Var` the symbolic sizes (`T.dynamic`, what
`Var(name, "int32")` makes outside a program), the variables of host
expressions (`Var(name, "float16")`, any other dtype: language/host_expr.py)
and T.Var values; `Call` a T.* operation applied outside a program. Inside a
tile program `const(v, dtype)` is `T.cast(v, dtype)`. The rest of TVM's TIR
(buffers, statements, functors, passes) is out of scope; its operations
(`reinterpret`, `if_then_else`, `floordiv`, `exp`, ...) are the T
namespace's, as TileLang's T re-exports them."""

from __future__ import annotations

import builtins
import operator

from ..base import dtypes as dt
from ..base.signature import SymbolicDim
from ..language.host_expr import HostCall, HostExpr, HostVar


def _default_dtype(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int32" if -2**31 <= value < 2**31 else "int64"
    if isinstance(value, float):
        return "float32"
    raise TypeError(f"tvm.tir.const takes a Python bool, int or float, got "
                    f"{type(value).__name__}")


class _Imm:
    """A TVM immediate: a Python number with its dtype (`.value`, `.dtype`)."""

    @property
    def value(self):
        return self._number()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.dtype!r}, {self._number()!r})"


class _IntImmValue(int, _Imm):
    def __new__(cls, dtype, value):
        obj = super().__new__(cls, int(value))
        obj.dtype = str(dt.as_dtype(dtype).name)
        return obj

    def _number(self) -> int:
        return int(self)


class _FloatImmValue(float, _Imm):
    def __new__(cls, dtype, value):
        obj = super().__new__(cls, float(value))
        obj.dtype = str(dt.as_dtype(dtype).name)
        return obj

    def _number(self) -> float:
        return float(self)


class _Check(type):
    def __instancecheck__(cls, obj) -> bool:
        return cls._matches(obj)


def _language_value(obj) -> bool:
    from ..language import values

    return isinstance(obj, values.Operators) and not isinstance(obj, values.Buffer)


def _t_var_class():
    import tilelang_mlir.language as T

    var = getattr(T, "Var", None)
    return var if isinstance(var, type) else None


class PrimExpr(metaclass=_Check):
    """`isinstance(x, tvm.tir.PrimExpr)`: see the module docstring."""

    @staticmethod
    def _matches(obj) -> bool:
        return isinstance(obj, (_Imm, SymbolicDim, HostExpr)) or _language_value(obj)


class IntImm(metaclass=_Check):
    """`IntImm(dtype, value)`; `isinstance(x, IntImm)`."""

    def __new__(cls, dtype, value, span=None):
        d = dt.as_dtype(dtype)
        if d.is_float:
            raise TypeError(f"IntImm of float dtype {d}: use FloatImm")
        return _IntImmValue(d, value)

    @staticmethod
    def _matches(obj) -> bool:
        return isinstance(obj, _IntImmValue)


class FloatImm(metaclass=_Check):
    """`FloatImm(dtype, value)`; `isinstance(x, FloatImm)`."""

    def __new__(cls, dtype, value, span=None):
        d = dt.as_dtype(dtype)
        if not d.is_float:
            raise TypeError(f"FloatImm of non-float dtype {d}: use IntImm")
        return _FloatImmValue(d, value)

    @staticmethod
    def _matches(obj) -> bool:
        return isinstance(obj, _FloatImmValue)


class Var(metaclass=_Check):
    """`Var(name, dtype)`: outside a tile program an integer Var is a
    symbolic size (what `T.dynamic(name)` makes); inside one, T.Var."""

    def __new__(cls, name: str, dtype="int32", span=None):
        from ..language import state

        if state.active():
            import tilelang_mlir.language as T

            if not hasattr(T, "Var"):
                raise NotImplementedError("not supported by tilelang-mlir: tvm.tir.Var inside a "
                                          "tile program (T.Var is not available yet)")
            return T.Var(name, dtype)
        d = dt.as_dtype(str(getattr(dtype, "name", dtype)))
        if d.name in ("int32", "int64"):
            return SymbolicDim(name, d)  # a size
        return HostVar(name, d)  # a variable of host expressions (host_expr.py)

    @staticmethod
    def _matches(obj) -> bool:
        if isinstance(obj, (SymbolicDim, HostVar)):
            return True
        var = _t_var_class()
        return var is not None and isinstance(obj, var)


class SizeVar(metaclass=_Check):
    """`SizeVar(name, dtype)`: TVM's variable known to be a size (not
    negative): outside a tile program a symbolic size, as `T.dynamic(name)`;
    `isinstance(x, SizeVar)` holds for the sizes made so."""

    def __new__(cls, name: str, dtype="int32", span=None):
        d = dt.as_dtype(str(getattr(dtype, "name", dtype)))
        if d.name not in ("int32", "int64"):
            raise TypeError(f"SizeVar {name!r} of dtype {d}: a size is int32 or int64")
        from ..language import state

        if state.active():
            raise NotImplementedError("not supported by tilelang-mlir: tvm.tir.SizeVar inside "
                                      "a tile program (declare sizes outside it, or use T.var)")
        return SymbolicDim(name, d)

    @staticmethod
    def _matches(obj) -> bool:
        return isinstance(obj, SymbolicDim)


class Call(metaclass=_Check):
    """`isinstance(x, Call)`: a T.* operation applied outside a tile program
    (host_expr.HostCall: `.op.name`, `.args`, `.dtype`)."""

    @staticmethod
    def _matches(obj) -> bool:
        return isinstance(obj, HostCall)


def _boolean(op: str, *xs):
    """`And` / `Or` / `Not` / `all` / `any` of booleans: Python bools on the
    host, runtime conditions inside a tile program."""
    from ..language import state, values

    if state.active():
        if op == "not":
            return values.unary("not", xs[0])
        result = xs[0]
        for x in xs[1:]:
            result = values.logical(op, result, x)
        return result
    if builtins.all(isinstance(x, (bool, int)) for x in xs):
        if op == "not":
            return not xs[0]
        return builtins.all(xs) if op == "and" else builtins.any(xs)
    from .refusals import TVM_EXPR_NODE, refusal

    raise NotImplementedError(refusal(f"tvm.tir boolean expression ({op}) of "
                                      f"{', '.join(type(x).__name__ for x in xs)} outside a "
                                      "tile program", TVM_EXPR_NODE))


def And(a, b, span=None):  # noqa: N802 (TVM's name)
    """`a and b` (TVM's tir.And)."""
    return _boolean("and", a, b)


def Or(a, b, span=None):  # noqa: N802 (TVM's name)
    """`a or b` (TVM's tir.Or)."""
    return _boolean("or", a, b)


def Not(a, span=None):  # noqa: N802 (TVM's name)
    """`not a` (TVM's tir.Not)."""
    return _boolean("not", a)


def all(*args, span=None):  # noqa: A001 (TVM's name)
    """Every condition holds (TVM's tir.all)."""
    return _boolean("and", *args) if len(args) > 1 else args[0]


def any(*args, span=None):  # noqa: A001 (TVM's name)
    """Some condition holds (TVM's tir.any)."""
    return _boolean("or", *args) if len(args) > 1 else args[0]


def _is_float(x) -> bool:
    if isinstance(x, float):
        return True
    d = getattr(x, "dtype", None)
    return bool(getattr(d, "is_float", False)) or (isinstance(d, str) and
                                                    dt.as_dtype(d).is_float)


def _trunc_div(a, b):
    """TVM's Div: C's division (toward zero) of integers, `/` of floats."""
    if _is_float(a) or _is_float(b):
        return a / b
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("tvm.tir.Div: integer division by zero")
        q = builtins.abs(a) // builtins.abs(b)
        return q if (a < 0) == (b < 0) else -q
    import tilelang_mlir.language as T

    return T.truncdiv(a, b)


def _trunc_mod(a, b):
    """TVM's Mod: the remainder of C's division (the sign of a); fmod of floats."""
    if isinstance(a, int) and isinstance(b, int):
        return a - b * _trunc_div(a, b)
    import tilelang_mlir.language as T

    return T.truncmod(a, b)


def _minmax(pick):
    def apply(a, b):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return pick(a, b)
        import tilelang_mlir.language as T

        return (T.min if pick is builtins.min else T.max)(a, b)
    return apply


def _floor(op):
    def apply(a, b):
        import tilelang_mlir.language as T

        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return a // b if op == "div" else a % b
        return T.floordiv(a, b) if op == "div" else T.floormod(a, b)
    return apply


def _node(name: str, fn, doc: str):
    """TVM's expression node `name` as a builder: tvm.tir.Add(a, b) is a + b
    (inside a tile program a value of the program, outside it a Python
    number or symbolic size)."""
    def build(a, b, span=None):
        return fn(a, b)
    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"{doc} (TVM's tir.{name})."
    return build


Add = _node("Add", operator.add, "a + b")
Sub = _node("Sub", operator.sub, "a - b")
Mul = _node("Mul", operator.mul, "a * b")
Div = _node("Div", _trunc_div, "a / b: integers divided toward zero (C), floats exactly")
Mod = _node("Mod", _trunc_mod, "the remainder of Div (the sign of a; fmod of floats)")
FloorDiv = _node("FloorDiv", _floor("div"), "a // b, rounded toward minus infinity")
FloorMod = _node("FloorMod", _floor("mod"), "a % b with the sign of b")
Min = _node("Min", _minmax(builtins.min), "the smaller of a and b")
Max = _node("Max", _minmax(builtins.max), "the larger of a and b")
EQ = _node("EQ", operator.eq, "a == b")
NE = _node("NE", operator.ne, "a != b")
LT = _node("LT", operator.lt, "a < b")
LE = _node("LE", operator.le, "a <= b")
GT = _node("GT", operator.gt, "a > b")
GE = _node("GE", operator.ge, "a >= b")

# The expression builders programs write as T.X or tvm.tir.X (compat adds
# them to the T namespace).
EXPR_BUILDERS = ("Add", "Sub", "Mul", "Div", "Mod", "FloorDiv", "FloorMod", "Min", "Max", "EQ",
                 "NE", "LT", "LE", "GT", "GE", "And", "Or", "Not")


def const(value, dtype=None, span=None):
    """A constant of `dtype` (inferred from `value` when omitted, as TVM
    does: int32 / int64, float32, bool)."""
    from ..language import state

    dtype = dtype if dtype is not None else _default_dtype(value)
    d = dt.as_dtype(str(getattr(dtype, "name", dtype)) if not isinstance(dtype, dt.DType)
                    else dtype)
    if state.active():
        import tilelang_mlir.language as T

        return T.cast(value, d)
    if d.is_float:
        return _FloatImmValue(d, value)
    return _IntImmValue(d, int(value))


def __getattr__(name):
    # TVM's TIR operations (tir.op: reinterpret, if_then_else, floordiv,
    # exp, ...) are the T namespace's, as TileLang's T re-exports them.
    import types

    import tilelang_mlir.language as T

    value = getattr(T, name, None)
    if value is not None and not isinstance(value, types.ModuleType) and \
            not name.startswith("_"):
        return value
    from .refusals import TVM_ANALYSIS, refusal

    raise AttributeError(refusal(f"tvm.tir.{name}", "TVM's TIR builders, statements, functors "
                                                    f"and passes: {TVM_ANALYSIS}"))


__all__ = ["const", "PrimExpr", "IntImm", "FloatImm", "Var", "SizeVar", "Call", "all", "any",
           *EXPR_BUILDERS]
