"""Values of tile programs during IR emission.

Three kinds of values flow through a tile program:

- `IndexExpr`: an integer index expression kept symbolic (a constant plus a
  linear combination of atoms: block indices, loop variables, symbolic sizes,
  and non-linear sub-expressions). Keeping indices symbolic is what lets
  `A[bx * 64:(bx + 1) * 64]` have the static extent 64, and lets the compiler
  see constant offsets; IR is emitted only when a value is needed.
- `Scalar`: any other scalar, an MLIR SSA value with a dtype.
- `Buffer` / `BufferRef`: a tile buffer or a subscript of one; a subscript is
  a load when used as a value and a region when passed to `T.copy`.

Operators on these build `arith`/`math` ops at the current insertion point;
Python numbers mix in and are converted with TileLang's promotion rules.
"""

from __future__ import annotations

import math as _pymath
from typing import Dict, List, Optional, Sequence, Tuple, Union

from ..base import dtypes as dt
from ..base.dtypes import DType
from ..base.errors import TileLangError
from ..base.signature import SymExpr
from . import state
from . import host_expr
from .host_expr import HostExpr

Number = Union[int, float, bool]


def _ir():
    from .. import ir

    return ir


def _arith():
    from ..dialects import arith

    return arith


def _computable(dtype) -> DType:
    dtype = dt.as_dtype(dtype)
    if dtype.name == "handle":  # T.ptr: a 64-bit device address (T.make_tensor reads it)
        return dtype
    if not dtype.compute:
        raise _error(f"not supported by tilelang-mlir: values and buffers of dtype {dtype} "
                     "(the compiler has no arithmetic for it)")
    return dtype


def ir_type(dtype: DType):
    """The MLIR type of a value of `dtype` (needs an active Context); a
    packed 4-bit type's value is its bit pattern (i4)."""
    dtype = dt.as_dtype(dtype)
    if dtype.pack > 1:
        return _ir().IntegerType.get_signless(dtype.bits)
    return _ir().Type.parse(_computable(dtype).mlir)


def storage_ir_type(dtype: DType):
    """The element type of buffers of `dtype`: bools are stored as one byte
    (i8), as in NumPy and PyTorch; the 4-bit types as bytes holding two
    elements (`DType.pack`)."""
    dtype = dt.as_dtype(dtype)
    if dtype.pack > 1 or _byte_vector(dtype):
        return _ir().Type.parse("i8")
    if lane_vector(dtype):  # its lanes along a last dimension of the memref
        return storage_ir_type(dtype.element)
    if dtype.is_subbyte:
        raise _error(f"not supported by tilelang-mlir: buffers of {dtype} ({dtype.bits}-bit "
                     "elements do not pack into bytes)")
    dtype = _computable(dtype)
    return _ir().Type.parse("i8" if dtype.kind == "bool" else dtype.mlir)


def lane_vector(dtype: DType) -> bool:
    """A vector dtype of whole-byte lanes (float16x2, float32x4, int8x4):
    a T.alloc_var / T.alloc_local of it holds its lanes as a last memref
    dimension; its values are Vectors."""
    return dtype.lanes > 1 and dtype.element.pack == 1 and not dtype.element.is_subbyte


def _byte_vector(dtype: DType) -> bool:
    """A vector of packed 4-bit lanes that fills one byte (float4_e2m1fnx2,
    TileLang's and torch's storage type of FP4 pairs): stored as that byte."""
    return dtype.lanes > 1 and dtype.element.pack == dtype.lanes


def physical_shape(shape, dtype: DType) -> list:
    """The memref shape of a buffer of logical `shape`: the last dimension
    divided by `dtype.pack` (ints; None stands for a dynamic size)."""
    dtype = dt.as_dtype(dtype)
    dims = list(shape)
    if lane_vector(dtype):
        raise _error(f"not supported by tilelang-mlir: tensors and shared or fragment "
                     f"buffers of the vector dtype {dtype}; T.alloc_var and T.alloc_local "
                     f"of it are (or use a buffer of {dtype.element} with one more "
                     "dimension)")
    if dtype.pack > 1 and dims:
        last = dims[-1]
        if isinstance(last, int):
            if last % dtype.pack:
                raise _error(f"the last dimension of a {dtype} buffer must be a multiple of "
                             f"{dtype.pack} (its elements are packed {dtype.pack} a byte), "
                             f"got {last}")
            dims[-1] = last // dtype.pack
    return dims


class LiteralRangeError(TileLangError, ValueError):
    """A Python number that the dtype it is given cannot represent (TVM's
    check of literals, a ValueError, raised when the program is defined)."""

    at_definition = True


def _check_float_literal(value, dtype: DType) -> None:
    """A finite Python float must be within the finite range of `dtype`."""
    import numpy as np

    try:
        limit = float(np.finfo(dt.to_numpy(dtype)).max)
    except (TypeError, ValueError):
        return
    if abs(float(value)) > limit:
        builder = state.current() if state.active() else None
        raise LiteralRangeError(f"Literal value {value} exceeds maximum of {dtype}",
                                builder.source_location() if builder else None)


def _error(message: str, kind=None, at_definition: bool = False) -> TileLangError:
    """An error at the current line (`kind`, `at_definition`: see
    base.errors.program_error)."""
    from ..base.errors import program_error

    builder = state.current() if state.active() else None
    return program_error(message, builder.source_location() if builder else None,
                         kind=kind, at_definition=at_definition)


def _strided_slice(buffer) -> TileLangError:
    """`A[0:10:2]`: TileLang's parser refuses a step when the program is
    defined (a RuntimeError there)."""
    return _error(f"strided slices of {buffer.name!r} are not supported: copy the elements "
                  f"in a T.Parallel or T.serial loop", kind=RuntimeError, at_definition=True)


# ---------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------


def e8m0_value(x: float) -> float:
    """The float8_e8m0fnu value of `x`, as a conversion on the device gives
    it: the magnitude rounded up to a power of two in [2^-127, 2^127]."""
    if _pymath.isnan(x):
        return x
    a = abs(x)
    if a <= 2.0 ** -127:
        return 2.0 ** -127
    if _pymath.isinf(a):
        return 2.0 ** 127
    m, e = _pymath.frexp(a)  # a = m 2^e, m in [0.5, 1)
    k = e - 1 if m == 0.5 else e
    return 2.0 ** min(k, 127)


def constant(value: Number, dtype: DType):
    """An arith.constant of `dtype` at the current insertion point."""
    ir, arith = _ir(), _arith()
    dtype = dt.as_dtype(dtype)
    ty = ir_type(dtype)
    if dtype.pack > 1 and dtype.is_float:  # float4_e2m1fn: its bits
        return arith.ConstantOp(ty, ir.IntegerAttr.get(ty, _e2m1_code(float(value)))).result
    if dtype.name == "float8_e8m0fnu":
        return arith.ConstantOp(ty, ir.FloatAttr.get(ty, e8m0_value(float(value)))).result
    if dtype.is_float:
        if _pymath.isinf(value) or _pymath.isnan(value):
            return arith.ConstantOp(ty, ir.FloatAttr.get(ty, float(value))).result
        _check_float_literal(value, dtype)  # float8: no numpy limit, not checked
        if dtype.bits == 8:
            # A finite constant past float8's range saturates, as every
            # conversion to float8 does (cvt.rn.satfinite); T.infinity keeps
            # its infinity.
            import ml_dtypes

            top = float(ml_dtypes.finfo(dt.to_numpy(dtype)).max)
            value = max(-top, min(top, float(value)))
        return arith.ConstantOp(ty, float(value)).result
    if dtype.kind == "index":
        return arith.ConstantOp(ty, ir.IntegerAttr.get(ty, int(value))).result
    if dtype.is_bool:
        return arith.ConstantOp(ty, ir.IntegerAttr.get(ty, 1 if value else 0)).result
    bits = dtype.bits
    v = int(value) & ((1 << bits) - 1)
    if v >= 1 << (bits - 1):
        v -= 1 << bits
    return arith.ConstantOp(ty, ir.IntegerAttr.get(ty, v)).result


# ---------------------------------------------------------------------------
# Symbolic index expressions
# ---------------------------------------------------------------------------


class Atom:
    """A leaf of an IndexExpr that is not a constant."""

    def materialize(self):
        raise NotImplementedError


class ValueAtom(Atom):
    """An index-typed SSA value (block index, loop variable, size, ...)."""

    __slots__ = ("value", "name")

    def __init__(self, value, name: str = ""):
        self.value = value
        self.name = name

    def __eq__(self, other):
        return isinstance(other, ValueAtom) and self.value == other.value

    def __hash__(self):
        return hash(("value", self.value))

    def materialize(self):
        return self.value

    def __repr__(self):
        return self.name or "%v"


class ThreadAtom(ValueAtom):
    """The thread index of the block (T.get_thread_binding): its
    comparisons with constants are thread ranges (`ThreadRange`)."""

    __slots__ = ()


class OpAtom(Atom):
    """A non-linear sub-expression: mul, floordiv, mod, min, max."""

    __slots__ = ("op", "lhs", "rhs")

    def __init__(self, op: str, lhs: "IndexExpr", rhs: "IndexExpr"):
        self.op, self.lhs, self.rhs = op, lhs, rhs

    def __eq__(self, other):
        return (isinstance(other, OpAtom) and self.op == other.op
                and self.lhs == other.lhs and self.rhs == other.rhs)

    def __hash__(self):
        return hash((self.op, self.lhs, self.rhs))

    def materialize(self):
        arith = _arith()
        a, b = self.lhs.materialize(), self.rhs.materialize()
        if self.op == "mul":
            return arith.MulIOp(a, b).result
        if self.op == "floordiv":
            return arith.FloorDivSIOp(a, b).result
        if self.op == "mod":
            q = arith.FloorDivSIOp(a, b).result
            return arith.SubIOp(a, arith.MulIOp(q, b).result).result
        if self.op == "max":
            return arith.MaxSIOp(a, b).result
        if self.op == "min":
            return arith.MinSIOp(a, b).result
        raise AssertionError(self.op)

    def __repr__(self):
        return f"{self.op}({self.lhs}, {self.rhs})"


class Operators:
    """Python's operators on tile-program values (IndexExpr, Scalar, Buffer
    and BufferRef; a buffer or a subscript used as a value is a load): each
    delegates to the promotion rules of `binary`, `unary` and `compare`."""

    __slots__ = ()

    def __add__(self, o): return binary("+", self, o)
    def __radd__(self, o): return binary("+", o, self)
    def __sub__(self, o): return binary("-", self, o)
    def __rsub__(self, o): return binary("-", o, self)
    def __mul__(self, o): return binary("*", self, o)
    def __rmul__(self, o): return binary("*", o, self)
    def __truediv__(self, o): return binary("/", self, o)
    def __rtruediv__(self, o): return binary("/", o, self)
    def __floordiv__(self, o): return binary("//", self, o)
    def __rfloordiv__(self, o): return binary("//", o, self)
    def __mod__(self, o): return binary("%", self, o)
    def __rmod__(self, o): return binary("%", o, self)
    def __pow__(self, o): return binary("**", self, o)
    def __and__(self, o): return binary("&", self, o)
    def __rand__(self, o): return binary("&", o, self)
    def __or__(self, o): return binary("|", self, o)
    def __ror__(self, o): return binary("|", o, self)
    def __xor__(self, o): return binary("^", self, o)
    def __lshift__(self, o): return binary("<<", self, o)
    def __rshift__(self, o): return binary(">>", self, o)
    def __neg__(self): return unary("-", self)
    def __invert__(self): return unary("~", self)
    def __lt__(self, o): return compare("<", self, o)
    def __le__(self, o): return compare("<=", self, o)
    def __gt__(self, o): return compare(">", self, o)
    def __ge__(self, o): return compare(">=", self, o)
    # `==` / `!=` in plain Python (a helper function a program calls, which
    # runs as Python, not through the parser) must compare at run time
    # where the result is used as a value, as TileLang's; a Python truth
    # test of it keeps the structural answer (see Equality).
    def __eq__(self, o): return Equality("==", self, o)
    def __ne__(self, o): return Equality("!=", self, o)
    __hash__ = object.__hash__

    def astype(self, dtype):
        """TVM's spelling of T.cast(self, dtype)."""
        return cast(self, dtype)


class IndexExpr(Operators):
    """const + sum(coeff * atom), with exact integer (floor) semantics."""

    __slots__ = ("const", "terms")
    dtype = dt.index

    def __init__(self, const: int = 0, terms: Optional[Dict[Atom, int]] = None):
        self.const = int(const)
        self.terms = {a: c for a, c in (terms or {}).items() if c != 0}

    @staticmethod
    def of(value, name: str = "") -> "IndexExpr":
        return IndexExpr(0, {ValueAtom(value, name): 1})

    @staticmethod
    def lift(x) -> Optional["IndexExpr"]:
        if isinstance(x, IndexExpr):
            return x
        if isinstance(x, bool):
            return None
        if isinstance(x, int):
            return IndexExpr(x)
        if isinstance(x, Scalar) and x.dtype.kind == "index":
            # An index value (T.cast(load, "index")) is an atom, so that
            # `Q[row:row + 64]` has a static extent for a runtime row.
            return IndexExpr.of(x.value)
        return None

    def is_const(self) -> bool:
        return not self.terms

    def same(self, other) -> bool:
        """Structural equality (the same expression)."""
        return (isinstance(other, IndexExpr) and self.const == other.const
                and self.terms == other.terms)

    def __hash__(self):
        return hash((self.const, frozenset(self.terms.items())))

    def __repr__(self):
        parts = [f"{c}*{a}" if c != 1 else repr(a) for a, c in self.terms.items()]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)

    # -- arithmetic (all exact on integers) --------------------------------
    def add(self, other: "IndexExpr", sign: int = 1) -> "IndexExpr":
        terms = dict(self.terms)
        for a, c in other.terms.items():
            terms[a] = terms.get(a, 0) + sign * c
        return IndexExpr(self.const + sign * other.const, terms)

    def scale(self, k: int) -> "IndexExpr":
        return IndexExpr(self.const * k, {a: c * k for a, c in self.terms.items()})

    def mul(self, other: "IndexExpr") -> "IndexExpr":
        if other.is_const():
            return self.scale(other.const)
        if self.is_const():
            return other.scale(self.const)
        return IndexExpr(0, {OpAtom("mul", self, other): 1})

    def _divisor(self, other: "IndexExpr", what: str) -> Optional[int]:
        """`other` as a constant divisor (None when it is not a constant);
        a zero one is an error."""
        if not other.is_const():
            return None
        if other.const == 0:
            raise _error(f"integer {what} by zero")
        return other.const

    def floordiv(self, other: "IndexExpr") -> "IndexExpr":
        d = self._divisor(other, "division")
        if d is not None:
            if self.is_const():
                return IndexExpr(self.const // d)
            if all(c % d == 0 for c in self.terms.values()):
                # the terms are a multiple of d: (m d + c) // d = m + c // d
                # (`(2 * i + 1) // 2` is i: a packed element's byte)
                return IndexExpr(self.const // d, {a: c // d for a, c in self.terms.items()})
            if d == 1:
                return self
        return IndexExpr(0, {OpAtom("floordiv", self, other): 1})

    def mod(self, other: "IndexExpr") -> "IndexExpr":
        d = self._divisor(other, "modulo")
        if d is not None and all(c % d == 0 for c in self.terms.values()):
            return IndexExpr(self.const % d)  # (a constant has no terms)
        return IndexExpr(0, {OpAtom("mod", self, other): 1})

    def minmax(self, other: "IndexExpr", op: str) -> "IndexExpr":
        if self.is_const() and other.is_const():
            f = max if op == "max" else min
            return IndexExpr(f(self.const, other.const))
        if self == other:
            return self
        return IndexExpr(0, {OpAtom(op, self, other): 1})

    # -- IR emission -------------------------------------------------------
    def materialize(self):
        """An `index` SSA value computing this expression."""
        arith = _arith()
        result = None
        for atom, coeff in self.terms.items():
            v = atom.materialize()
            if coeff != 1:
                v = arith.MulIOp(v, constant(coeff, dt.index)).result
            result = v if result is None else arith.AddIOp(result, v).result
        if result is None:
            return constant(self.const, dt.index)
        if self.const:
            result = arith.AddIOp(result, constant(self.const, dt.index)).result
        return result

    def to_scalar(self) -> "Scalar":
        return Scalar(self.materialize(), dt.index)

    def __neg__(self):  # exact: no runtime negation
        return self.scale(-1)

    def __bool__(self):
        raise _error("a runtime index value has no compile-time truth value; "
                     "use it in an `if` on the device or in T.if_then_else")


# ---------------------------------------------------------------------------
# Runtime scalars
# ---------------------------------------------------------------------------


class Scalar(Operators):
    """An SSA scalar value with its tile dtype. An integer scalar made by
    + - * also keeps its symbolic form (`affine`, over the scalars it came
    from), so that `X[s + 64 * b : s + 64 * (b + 1)]` with a loaded `s` has
    the static extent 64."""

    __slots__ = ("value", "dtype", "affine")

    def __init__(self, value, dtype: DType, affine: Optional["IndexExpr"] = None):
        self.value = value
        self.dtype = dt.as_dtype(dtype)
        self.affine = affine

    def __repr__(self):
        return f"Scalar({self.dtype})"

    def __bool__(self):
        raise _error("a runtime value has no compile-time truth value; use it "
                     "in an `if` on the device or in T.if_then_else")


class FloatImm(Scalar):
    """A compile-time float constant with its dtype (T.max_value of a float
    type, and arithmetic of such constants with Python numbers): as TVM's
    FloatImm, it keeps its exact value (`number`) until a runtime value
    meets it, so `T.max_value(T.float4_e2m1fn) * 2**-126` is 6 * 2**-126
    next to a float32, not that product rounded to float4 (zero). `value`
    is the constant rounded to `dtype`."""

    __slots__ = ("number",)

    def __init__(self, number: float, dtype: DType):
        self.number = float(number)
        dtype = dt.as_dtype(dtype)
        super().__init__(_rounded_constant(self.number, dtype), dtype)


def _rounded_constant(number: float, dtype: DType):
    """`number` as a constant of float `dtype`, rounded (saturating where the
    literal check refuses it: a folded constant past the type's range)."""
    try:
        return constant(number, dtype)
    except TileLangError:
        return _convert_value(constant(number, dt.float64), dt.float64, dtype)


class PromotedInt(Scalar):
    """A narrow integer (under 32 bits) computed by an operation that C
    evaluates in an int (a left shift; arithmetic on bools): `value` has the
    dtype's bits (a bool: the int is nonzero), `wide` the int32 C computes,
    which a conversion to a wider integer (from a bool: to any number)
    reads."""

    __slots__ = ("wide",)

    def __init__(self, value, dtype: DType, wide):
        super().__init__(value, dtype)
        self.wide = wide


class ThreadRange(Scalar):
    """A run-time boolean that holds exactly on threads [lo, hi) of the
    block (`tx < 128`, `tx >= 128 and tx < 256`): an `if` on it gives those
    threads a role (tile.role). `hi` may exceed the block's threads."""

    __slots__ = ("lo", "hi")

    def __init__(self, value, lo: int, hi: int):
        super().__init__(value, dt.boolean)
        self.lo, self.hi = lo, hi


# Past every block's last thread (1024): an open-ended thread range.
_THREADS_END = 1 << 30


def _is_thread_index(x) -> bool:
    if not isinstance(x, IndexExpr) or x.const != 0 or len(x.terms) != 1:
        return False
    ((atom, coeff),) = x.terms.items()
    return isinstance(atom, ThreadAtom) and coeff == 1


def _thread_range(op: str, a, b):
    """[lo, hi) of `a op b` where one side is the thread index and the
    other an integer constant; None otherwise."""
    flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
    if _is_thread_index(b) and not _is_thread_index(a):
        a, b, op = b, a, flip[op]
    c = IndexExpr.lift(b)
    if not _is_thread_index(a) or c is None or not c.is_const():
        return None
    c = c.const
    return {"<": (0, c), "<=": (0, c + 1), ">": (c + 1, _THREADS_END),
            ">=": (c, _THREADS_END), "==": (c, c + 1)}.get(op)


class Vector(Operators):
    """A value of a vector dtype (TileLang's `float16x2`, `T.Ramp`,
    `T.Broadcast`, a slice loaded as a value `A[0, 0:4]`): its lanes, each
    a scalar value (a Scalar, or an IndexExpr for an index vector).
    Operations apply lane by lane; a scalar operand is broadcast."""

    __slots__ = ("lanes",)

    def __init__(self, lanes):
        lanes = list(lanes)
        if not 1 <= len(lanes) <= MAX_LANES:
            raise _error(f"a vector has 1 to {MAX_LANES} lanes, got {len(lanes)}")
        self.lanes = lanes

    def __len__(self):
        return len(self.lanes)

    @property
    def dtype(self) -> DType:
        first = self.lanes[0]
        element = first.dtype if isinstance(first, (Scalar, IndexExpr)) else \
            _common_dtype(first, first)
        return element.with_lanes(len(self.lanes)) if element.kind != "index" else element

    def __repr__(self):
        return f"Vector({len(self.lanes)} lanes)"

    def __bool__(self):
        raise _error("a vector value has no compile-time truth value")


# The most lanes a vector value may have (each lane is emitted as a scalar).
MAX_LANES = 256


def _lanes_of(values) -> Optional[int]:
    """The common lane count of the Vector operands (None: no vector)."""
    n = None
    for v in values:
        if isinstance(v, Vector):
            if n is not None and len(v) != n:
                raise _error(f"vector operands of {n} and {len(v)} lanes")
            n = len(v)
    return n


def _lane(v, i):
    return v.lanes[i] if isinstance(v, Vector) else v


def _lanewise(fn, *args):
    """`fn` applied lane by lane when an argument is a Vector, else once."""
    n = _lanes_of(args)
    if n is None:
        return fn(*args)
    return Vector([fn(*[_lane(a, i) for a in args]) for i in range(n)])


Value = Union[int, float, bool, IndexExpr, Scalar]


def is_runtime(x) -> bool:
    if isinstance(x, Equality):
        return is_runtime(x.a) or is_runtime(x.b)
    if isinstance(x, LetVar):
        return x.bound is None or is_runtime(x.bound)
    if isinstance(x, Vector):
        return True
    return isinstance(x, (Scalar, BufferRef, Buffer)) or (
        isinstance(x, IndexExpr) and not x.is_const())


def _dtype_of(x) -> Optional[DType]:
    if isinstance(x, (Scalar, IndexExpr)):
        return x.dtype
    return None


def _convert_value(v, src: DType, dst: DType):
    """Converts SSA value `v` of tile dtype `src` to `dst` (C-like rules:
    floats round to nearest, float to int truncates, bools are 0/1)."""
    arith = _arith()
    if src == dst or (src.mlir == dst.mlir and src.kind == dst.kind):
        return v
    if src.pack > 1 and src.is_float:  # float4_e2m1fn: through float32
        return _convert_value(_decode_e2m1(v), dt.float32, dst)
    if dst.pack > 1 and dst.is_float:
        return _encode_e2m1(_convert_value(v, src, dt.float32))
    ir = _ir()
    dty = ir_type(dst)
    if src.mlir == dst.mlir:  # int8 <-> uint8: same bits
        return v
    if src.kind == "index":
        i64 = arith.IndexCastOp(ir.IntegerType.get_signless(64), v).result
        return _convert_value(i64, dt.int64, dst)
    if dst.kind == "index":
        if src.is_float:
            v = _convert_value(v, src, dt.int64)
            src = dt.int64
        if src.is_unsigned:
            return arith.IndexCastUIOp(dty, v).result
        return arith.IndexCastOp(dty, v).result
    if src.is_float and dst.is_float:
        if src.bits < dst.bits:
            return arith.ExtFOp(dty, v).result
        if src.bits > dst.bits:
            return arith.TruncFOp(dty, v).result
        wide = arith.ExtFOp(ir.F32Type.get(), v).result
        return arith.TruncFOp(dty, wide).result
    if dst.is_float:
        if src.is_unsigned:
            return arith.UIToFPOp(dty, v).result
        return arith.SIToFPOp(dty, v).result
    if dst.is_bool:
        zero = constant(0, src)
        if src.is_float:
            return arith.CmpFOp(arith.CmpFPredicate.UNE, v, zero).result
        return arith.CmpIOp(arith.CmpIPredicate.ne, v, zero).result
    if src.is_float:
        if dst.is_unsigned:
            return arith.FPToUIOp(dty, v).result
        return arith.FPToSIOp(dty, v).result
    if src.bits < dst.bits:
        if src.is_unsigned:
            return arith.ExtUIOp(dty, v).result
        return arith.ExtSIOp(dty, v).result
    if src.bits > dst.bits:
        return arith.TruncIOp(dty, v).result
    return v


def _e2m1_code(x: float) -> int:
    """The E2M1 bits of a Python float (as _encode_e2m1 rounds), as the
    signed i4 pattern."""
    a = abs(x)
    code = sum(1 for bound, inclusive in ((0.25, False), (0.75, True), (1.25, False),
                                          (1.75, True), (2.5, False), (3.5, True), (5.0, False))
               if (a >= bound if inclusive else a > bound))
    if _pymath.copysign(1.0, x) < 0:
        code |= 8
    return code - 16 if code >= 8 else code


def _decode_e2m1(v):
    """The float32 value of E2M1 bits `v` (i4: sign, 2 exponent bits with
    bias 1, 1 mantissa bit): +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}."""
    arith, ir = _arith(), _ir()
    i32 = ir.IntegerType.get_signless(32)
    c = arith.ExtUIOp(i32, v).result
    e = arith.AndIOp(arith.ShRUIOp(c, constant(1, dt.int32)).result, constant(3, dt.int32)).result
    m = arith.AndIOp(c, constant(1, dt.int32)).result
    normal = arith.CmpIOp(arith.CmpIPredicate.ne, e, constant(0, dt.int32)).result
    lead = arith.SelectOp(normal, constant(2, dt.int32), constant(0, dt.int32)).result
    shift = arith.MaxUIOp(e, constant(1, dt.int32)).result
    scaled = arith.ShLIOp(arith.AddIOp(lead, m).result, shift).result
    f32 = ir.F32Type.get()
    mag = arith.MulFOp(arith.UIToFPOp(f32, scaled).result, constant(0.25, dt.float32)).result
    negative = arith.CmpIOp(arith.CmpIPredicate.ne,
                            arith.AndIOp(c, constant(8, dt.int32)).result,
                            constant(0, dt.int32)).result
    return arith.SelectOp(negative, arith.NegFOp(mag).result, mag).result


def _encode_e2m1(x):
    """The E2M1 bits (i4) of float32 `x`: rounded to nearest, ties to an
    even code, saturated at +-6 (CUDA's satfinite conversion)."""
    arith, ir = _arith(), _ir()
    i32 = ir.IntegerType.get_signless(32)
    from ..dialects import math as mmath

    a = mmath.AbsFOp(x).result
    code = constant(0, dt.int32)
    for bound, inclusive in ((0.25, False), (0.75, True), (1.25, False), (1.75, True),
                             (2.5, False), (3.5, True), (5.0, False)):
        pred = arith.CmpFPredicate.OGE if inclusive else arith.CmpFPredicate.OGT
        above = arith.CmpFOp(pred, a, constant(bound, dt.float32)).result
        code = arith.AddIOp(code, arith.ExtUIOp(i32, above).result).result
    word = arith.BitcastOp(i32, x).result
    sign = arith.AndIOp(arith.ShRUIOp(word, constant(28, dt.int32)).result,
                        constant(8, dt.int32)).result
    code = arith.OrIOp(code, sign).result
    return arith.TruncIOp(ir.IntegerType.get_signless(4), code).result


def to_scalar(x, dtype: Optional[DType] = None) -> Scalar:
    """Turns any value (Python number, index expression, load) into a
    Scalar, converted to `dtype` when given."""
    if isinstance(x, (HostExpr, Equality)):
        x = _unwrap_ref(x)
    if isinstance(x, (BufferRef, Buffer)):
        x = x.load()
    if isinstance(x, Vector):
        raise _error(f"a vector value ({len(x)} lanes) where a scalar is needed")
    if isinstance(x, IndexExpr):
        x = x.to_scalar()
    if isinstance(x, Scalar):
        if dtype is None:
            return x
        dtype = dt.as_dtype(dtype)
        if isinstance(x, FloatImm) and dtype.is_float and dtype != x.dtype:
            return Scalar(_rounded_constant(x.number, dtype), dtype)
        if isinstance(x, PromotedInt) and not dtype.is_bool and (
                x.dtype.is_bool or (dtype.is_int and dtype.bits > x.dtype.bits)):
            return Scalar(_convert_value(x.wide, dt.int32, dtype), dtype)
        return Scalar(_convert_value(x.value, x.dtype, dtype), dtype)
    if isinstance(x, (bool, int, float)):
        if dtype is None:
            dtype = dt.boolean if isinstance(x, bool) else (
                dt.int32 if isinstance(x, int) else dt.float32)
        dtype = dt.as_dtype(dtype)
        if dtype.is_int and isinstance(x, float) and not float(x).is_integer():
            raise _error(f"cannot use {x} as a value of integer type {dtype}")
        return Scalar(constant(x, dtype), dtype)
    raise _error(f"expected a scalar value, got {_describe(x)}")


def to_storage(value, dtype: DType):
    """The SSA value to store into a buffer of `dtype` (bools as i8)."""
    v = to_scalar(value, dtype)
    if dtype.is_bool:
        ir = _ir()
        return _arith().ExtUIOp(ir.IntegerType.get_signless(8), v.value).result
    return v.value


def storage_constant(value, dtype: DType):
    """`value` (a Python number) as an attribute of the storage element
    type of `dtype` (bools as i8; unsigned integers wrap to their bits)."""
    ir = _ir()
    t = storage_ir_type(dtype)
    if isinstance(value, bool) or dtype.is_bool:
        return ir.IntegerAttr.get(t, int(bool(value)))
    if not isinstance(value, (int, float)):
        raise _error(f"expected a Python number as a constant of {dtype}, got {_describe(value)}")
    if dtype.is_float:
        return ir.FloatAttr.get(t, float(value))
    if isinstance(value, float) and not value.is_integer():
        raise _error(f"cannot use {value} as a value of integer type {dtype}")
    bits = dtype.bits
    v = int(value) & ((1 << bits) - 1)
    if v >= 1 << (bits - 1):
        v -= 1 << bits
    return ir.IntegerAttr.get(t, v)


def from_storage(raw, dtype: DType) -> Scalar:
    """The Scalar of a value loaded from a buffer of `dtype`."""
    if dtype.is_bool:
        return Scalar(_convert_value(raw, dt.int8, dt.boolean), dt.boolean)
    return Scalar(raw, dtype)


def cast(x, dtype) -> Union[Scalar, Number]:
    """T.cast(x, dtype): converts a value; Python numbers stay Python numbers
    outside tile programs."""
    dtype = dt.as_dtype(dtype)
    if not state.active() and isinstance(x, (bool, int, float)):
        return float(x) if dtype.is_float else int(x)
    x = _unwrap_ref(x)
    if isinstance(x, Vector) or dtype.lanes > 1:
        if isinstance(x, Vector) and dtype.lanes > 1 and dtype.lanes != len(x):
            raise _error(f"cannot cast a vector of {len(x)} lanes to {dtype}")
        if not isinstance(x, Vector):
            x = Vector([x] * dtype.lanes)  # a scalar cast to a vector type: broadcast
        return Vector([to_scalar(lane, dtype.element) for lane in x.lanes])
    return to_scalar(x, dtype)


def _describe(x) -> str:
    if isinstance(x, Buffer):
        return f"buffer {x.name!r} ({x.scope}, {x.dtype})"
    if isinstance(x, BufferRef):
        return f"an element of buffer {x.buffer.name!r}"
    if isinstance(x, Scalar):
        return f"a {x.dtype} value"
    if isinstance(x, IndexExpr):
        return "an index value"
    return f"{type(x).__name__} {x!r}"


# ---------------------------------------------------------------------------
# Promotion and operators
# ---------------------------------------------------------------------------


_IEEE = ("float16", "float32", "float64", "tfloat32")


def promote(a: DType, b: DType) -> DType:
    """The common dtype of a binary operation `a op b`: TVM's
    `BinaryOpMatchTypes`, which TileLang's expressions follow. Of two IEEE
    floats (float16/32/64) the wider; an IEEE float over any other type
    (bfloat16 + float16 is float16); then bfloat16 over the rest; a float8
    or narrower float over integers; of two integers the wider, and at one
    width the unsigned (int32 + uint32 is uint32; a bool is a 1-bit
    unsigned integer)."""
    if a == b:
        return a
    # (by element: float16x2 is an IEEE float16 lane by lane)
    na, nb = a.element.name, b.element.name
    ea, eb = na in _IEEE, nb in _IEEE
    if ea and eb:
        return b if b.bits > a.bits else a
    if eb:
        return b
    if ea:
        return a
    if nb == "bfloat16":
        return b
    if na == "bfloat16":
        return a
    if a.is_float and b.is_float:
        raise TypeError(f"cannot mix {a} and {b} in one operation (TileLang "
                        "refuses it too): convert one side with T.cast first")
    if a.is_float or b.is_float:
        return a if a.is_float else b
    if a.kind == "index" or b.kind == "index":
        return dt.index
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return a if a.is_unsigned else b


_BITWISE = ("&", "|", "^", "<<", ">>")


def _python_dtype(x, other: DType, op: str = "") -> DType:
    """The dtype of a Python number in an operation with a value of dtype
    `other`, as TVM gives it (`tir.const`): a bool is bool, an int int32
    (int64 past its range), a float float32, whatever the other side is
    (`f16 * 0.5` computes in float32, `int8 + 1` in int32; the other
    operand's dtype wins only by promotion: `f16 * 2` is float16). An int
    beside a bitwise operator takes the other side's dtype (`u8 >> 4` stays
    uint8). Index arithmetic (the compiler's own) keeps its index dtype."""
    if isinstance(x, bool):
        return dt.boolean
    if isinstance(x, int):
        if op in _BITWISE or other.kind == "index":
            return other
        return dt.int32 if -2**31 <= x < 2**31 else dt.int64
    return dt.float32


def _common_dtype(a, b, op: str = "") -> DType:
    """The dtype the two operands of an operation promote to (a Python
    number typed by `_python_dtype`; two Python numbers, which only
    T.if_then_else on a runtime condition meets: float32 or int32)."""
    da, db = _dtype_of(a), _dtype_of(b)
    if da is None and db is None:
        da = db = dt.float32 if isinstance(a, float) or isinstance(b, float) else dt.int32
    if da is None:
        da = _python_dtype(a, db, op)
    if db is None:
        db = _python_dtype(b, da, op)
    return promote(da, db)


_PY_OPS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
    "**": lambda a, b: a ** b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b, "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
}


def _unwrap_ref(x):
    if isinstance(x, (BufferRef, Buffer)):
        return x.load()
    if isinstance(x, Equality):
        return x.value()
    if isinstance(x, SymExpr) and state.active():  # a size computed on the host
        return state.current().symbolic_value(x)
    if isinstance(x, LetVar):
        return _unwrap_ref(x.value())
    if isinstance(x, HostExpr) and state.active():  # made outside the program
        return _unwrap_ref(host_expr.materialize(x))
    return x


class Equality(Operators):
    """`a == b` or `a != b` of tile values written in plain Python. Used as
    a value (T.if_then_else, arithmetic, an `if` in the program), it is the
    comparison at run time (a Python bool when both sides are constants).
    In a Python truth test it answers whether the two sides are the same
    expression (IndexExpr structure, else identity): what the compiler's own
    `==` on these objects needs (dictionary keys, `in`)."""

    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a, b):
        self.op, self.a, self.b = op, a, b

    def value(self):
        return compare(self.op, self.a, self.b)

    def __bool__(self):
        a, b = self.a, self.b
        ia = IndexExpr.lift(a) if not isinstance(a, Scalar) else None
        ib = IndexExpr.lift(b) if not isinstance(b, Scalar) else None
        same = ia.same(ib) if ia is not None and ib is not None else a is b
        return same if self.op == "==" else not same

    def __repr__(self):
        return f"({self.a!r} {self.op} {self.b!r})"


def binary(op: str, a, b):
    """`a op b` with TileLang's promotion rules (lane by lane on vectors)."""
    a, b = _vector_ref(a), _vector_ref(b)
    return _lanewise(lambda x, y: _binary_scalar(op, x, y), a, b)


def _vector_ref(x):
    """A sliced buffer region used as a value is the vector of its elements."""
    if isinstance(x, BufferRef) and x.is_vector():
        return x.load()
    return x


def _binary_scalar(op: str, a, b):
    raw_a, raw_b = a, b
    a, b = _unwrap_ref(a), _unwrap_ref(b)
    if not isinstance(a, (Scalar, IndexExpr)) and not isinstance(b, (Scalar, IndexExpr)):
        return _PY_OPS[op](a, b)
    ia, ib = IndexExpr.lift(a), IndexExpr.lift(b)
    # An index scalar that keeps a symbolic form stays a scalar, so that
    # `start + 64 * b + 64` keeps its form too.
    symbolic = any(isinstance(x, Scalar) and x.affine is not None for x in (a, b))
    if ia is not None and ib is not None and not (symbolic and op in ("+", "-", "*")):
        if op == "+":
            return ia.add(ib)
        if op == "-":
            return ia.add(ib, -1)
        if op == "*":
            return ia.mul(ib)
        if op == "//":
            return ia.floordiv(ib)
        if op == "%":
            return ia.mod(ib)
        if op == "/":
            raise _error("'/' on integer indices is ambiguous: use '//' (floor "
                         "division) or T.ceildiv")
    # Runtime scalar arithmetic.
    dtype = _common_dtype(a, b, op)
    if op == "/" and not dtype.is_float:
        raise _error(f"'/' on {dtype} values is ambiguous: use '//' (floor "
                     "division), or cast to a float type first")
    # Constants fold exactly, as TVM folds FloatImm arithmetic.
    consts = [x.number if isinstance(x, FloatImm) else x
              if isinstance(x, (int, float)) and not isinstance(x, bool) else None
              for x in (a, b)]
    if dtype.is_float and None not in consts and op in ("+", "-", "*", "/") and \
            not (op == "/" and consts[1] == 0):
        return FloatImm(_PY_OPS[op](*consts), dtype)
    if is_float8(dtype):
        # As TileLang's float8 operators (cutlass): each operation computes
        # in float32 and rounds its result back to float8 (nearest even,
        # saturating to the largest finite value).
        sa, sb = (to_computable(x, dtype) for x in (a, b))
        return Scalar(_convert_value(_emit_binary(op, sa.value, sb.value, dt.float32),
                                     dt.float32, dtype), dtype)
    if dtype.is_bool and op in ("+", "-", "*", "//", "%"):
        # TileLang's CUDA C++ computes bools as ints (true + true is 2, a
        # true bool when stored): the sum is that int, true where nonzero,
        # and the int beside it for further arithmetic and conversions.
        # (to_scalar reads a bool sum's int: see PromotedInt)
        wa, wb = (to_scalar(x, dt.int32).value for x in (a, b))
        wide = _emit_binary(op, wa, wb, dt.int32)
        return PromotedInt(_convert_value(wide, dt.int32, dt.boolean), dt.boolean, wide)
    sa, sb = to_scalar(a, dtype), to_scalar(b, dtype)
    if op == "<<" and dtype.is_int and not dtype.is_bool and dtype.bits < 32 and \
            dtype.kind != "index":
        # TileLang's CUDA C++ shifts an integer narrower than 32 bits as its
        # C promotion, an int: `T.cast(h << 20, T.uint32)` of a uint16 keeps
        # the bits shifted past 16. The value keeps its dtype (a store or a
        # T.reinterpret sees the narrow bits) and that wide value beside it.
        wa, wb = (to_scalar(x, dt.int32) for x in (sa, sb))
        return PromotedInt(_emit_binary(op, sa.value, sb.value, dtype), dtype,
                           _emit_binary(op, wa.value, wb.value, dt.int32))
    affine = None
    if op in ("+", "-", "*") and dtype.is_int:
        fa, fb = symbolic_form(raw_a), symbolic_form(raw_b)
        if fa is not None and fb is not None:
            affine = fa.add(fb) if op == "+" else fa.add(fb, -1) if op == "-" else fa.mul(fb)
    return Scalar(_emit_binary(op, sa.value, sb.value, dtype), dtype, affine)


class _ScalarAtom(Atom):
    """A runtime integer scalar as a symbol of `Scalar.affine` (compared,
    never materialized)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, _ScalarAtom) and self.value == other.value

    def __hash__(self):
        return hash(("scalar", self.value))

    def materialize(self):
        raise AssertionError("a symbolic scalar is not materialized")

    def __repr__(self):
        return "%s"


def symbolic_form(x) -> Optional[IndexExpr]:
    """`x` as a symbolic integer expression: an index expression, the
    `affine` form of an integer scalar, or the scalar itself as a symbol (a
    load from a global tensor is the symbol of the tensor and its indices,
    as in TVM's structural simplification: two loads of `cu_seqlens[b]`
    are one symbol); None for anything else."""
    if isinstance(x, Buffer) and x.ndim == 0:
        x = BufferRef(x, ())
    if isinstance(x, BufferRef) and not x.buffer.dtype.is_float and \
            all(not isinstance(i, slice) for i in x.items):
        try:
            # An index that is itself a runtime scalar (`Offsets[i_n]`, i_n
            # loaded) is that scalar's symbol, not a new conversion of it.
            idx = tuple(f if (f := symbolic_form(i)) is not None else to_index(i)
                        for i in x.items)
        except TileLangError:
            idx = None
        if idx is not None and len(idx) == x.buffer.ndim:
            # Loads of a buffer this program writes (a T.alloc_var, ...) are
            # one symbol only between two of its stores.
            version = x.buffer.stores
            return IndexExpr(0, {_ScalarAtom((x.buffer.value, idx, version)): 1})
    x = _unwrap_ref(x)
    if isinstance(x, Scalar) and x.affine is not None:
        return x.affine
    lifted = IndexExpr.lift(x)
    if lifted is not None:
        return lifted
    if isinstance(x, Scalar) and x.dtype.is_int:
        return IndexExpr(0, {_ScalarAtom(x.value): 1})
    return None


def is_float8(dtype: DType) -> bool:
    """Whether values of `dtype` are float8 or narrower (float6, packed
    float4): they are computed on in float32 and rounded back after each
    operation."""
    return dtype.is_float and dtype.bits <= 8


def to_computable(x, dtype: DType) -> Scalar:
    """`x` as a value of `dtype`, widened to float32 when `dtype` is float8
    (Python numbers are rounded to `dtype` first, as TileLang's constants
    take the other operand's dtype)."""
    s = to_scalar(x, dtype)
    if is_float8(dtype):
        return to_scalar(s, dt.float32)
    return s


def _emit_binary(op: str, x, y, dtype: DType):
    arith = _arith()
    f = dtype.is_float
    u = dtype.is_unsigned
    if op == "+":
        return (arith.AddFOp if f else arith.AddIOp)(x, y).result
    if op == "-":
        return (arith.SubFOp if f else arith.SubIOp)(x, y).result
    if op == "*":
        return (arith.MulFOp if f else arith.MulIOp)(x, y).result
    if op == "/":
        return arith.DivFOp(x, y).result
    if op == "//":
        if f:
            from ..dialects import math

            return math.FloorOp(arith.DivFOp(x, y).result).result
        return (arith.DivUIOp if u else arith.FloorDivSIOp)(x, y).result
    if op == "%":
        if f:
            from ..dialects import math

            q = math.FloorOp(arith.DivFOp(x, y).result).result
            return arith.SubFOp(x, arith.MulFOp(q, y).result).result
        if u:
            return arith.RemUIOp(x, y).result
        q = arith.FloorDivSIOp(x, y).result
        return arith.SubIOp(x, arith.MulIOp(q, y).result).result
    if op == "**":
        from ..dialects import math

        if not f:
            raise _error("'**' needs float operands")
        return math.PowFOp(x, y).result
    if f:
        raise _error(f"operator {op!r} needs integer or bool operands, got {dtype}")
    if op == "&":
        return arith.AndIOp(x, y).result
    if op == "|":
        return arith.OrIOp(x, y).result
    if op == "^":
        return arith.XOrIOp(x, y).result
    if op == "<<":
        return arith.ShLIOp(x, y).result
    if op == ">>":
        return (arith.ShRUIOp if u else arith.ShRSIOp)(x, y).result
    raise _error(f"unsupported operator {op!r}")


def unary(op: str, a):
    """`op a` (lane by lane on a vector)."""
    return _lanewise(lambda x: _unary_scalar(op, x), _vector_ref(a))


def _unary_scalar(op: str, a):
    a = _unwrap_ref(a)
    if not isinstance(a, (Scalar, IndexExpr)):
        return {"-": lambda x: -x, "+": lambda x: +x, "~": lambda x: ~x,
                "not": lambda x: not x}[op](a)
    if op == "+":
        return a
    if op == "-":
        if isinstance(a, IndexExpr):
            return a.scale(-1)
        # -x keeps x's dtype (TVM's neg): a zero of that dtype
        return binary("-", to_scalar(0.0 if a.dtype.is_float else 0, a.dtype), a)
    s = to_scalar(a)
    if op == "not":
        b = to_scalar(s, dt.boolean)
        return Scalar(_arith().XOrIOp(b.value, constant(1, dt.boolean)).result, dt.boolean)
    if op == "~":
        if s.dtype.is_float:
            raise _error("'~' needs an integer operand")
        return Scalar(_arith().XOrIOp(s.value, constant(-1, s.dtype)).result, s.dtype)
    raise _error(f"unsupported unary operator {op!r}")


_CMP_PY = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
           ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
           "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


def compare(op: str, a, b):
    """`a op b` (lane by lane on vectors)."""
    a, b = _vector_ref(a), _vector_ref(b)
    return _lanewise(lambda x, y: _compare_scalar(op, x, y), a, b)


def _compare_scalar(op: str, a, b):
    a, b = _unwrap_ref(a), _unwrap_ref(b)
    ia, ib = IndexExpr.lift(a), IndexExpr.lift(b)
    if ia is not None and ib is not None and ia.is_const() and ib.is_const():
        return _CMP_PY[op](ia.const, ib.const)
    if isinstance(a, IndexExpr) and isinstance(b, IndexExpr) and a.same(b):
        # One exact index expression on both sides (a symbolic size read from
        # two tensors' shapes): decided here, as for constants.
        return _CMP_PY[op](0, 0)
    if not isinstance(a, (Scalar, IndexExpr)) and not isinstance(b, (Scalar, IndexExpr)):
        return _CMP_PY[op](a, b)
    arith = _arith()
    dtype = _common_dtype(a, b)
    sa, sb = to_computable(a, dtype), to_computable(b, dtype)
    if dtype.is_float:
        pred = {"<": "OLT", "<=": "OLE", ">": "OGT", ">=": "OGE", "==": "OEQ", "!=": "UNE"}[op]
        v = arith.CmpFOp(getattr(arith.CmpFPredicate, pred), sa.value, sb.value).result
    else:
        if dtype.is_unsigned:
            pred = {"<": "ult", "<=": "ule", ">": "ugt", ">=": "uge", "==": "eq", "!=": "ne"}[op]
        else:
            pred = {"<": "slt", "<=": "sle", ">": "sgt", ">=": "sge", "==": "eq", "!=": "ne"}[op]
        v = arith.CmpIOp(getattr(arith.CmpIPredicate, pred), sa.value, sb.value).result
    rng = _thread_range(op, a, b)
    if rng is not None:
        return ThreadRange(v, *rng)
    return Scalar(v, dt.boolean)


def logical(op: str, a, b):
    """`and` / `or` on runtime booleans (lane by lane on vectors)."""
    return _lanewise(lambda x, y: _logical_scalar(op, x, y), _vector_ref(a), _vector_ref(b))


def _logical_scalar(op: str, a, b):
    """`and` / `or` on runtime booleans (both sides are evaluated)."""
    sa, sb = to_scalar(a, dt.boolean), to_scalar(b, dt.boolean)
    arith = _arith()
    fn = arith.AndIOp if op == "and" else arith.OrIOp
    v = fn(sa.value, sb.value).result
    if op == "and" and isinstance(a, ThreadRange) and isinstance(b, ThreadRange):
        return ThreadRange(v, max(a.lo, b.lo), min(a.hi, b.hi))
    return Scalar(v, dt.boolean)


def _parallel_bounds() -> Dict:
    """The ranges of the enclosing T.Parallel loops' variables: atom ->
    extent (constant extents only)."""
    b = state.current() if state.active() else None
    out = {}
    for _, ivs, extents in getattr(b, "_parallel_stack", ()):
        for iv, e in zip(ivs, extents):
            if isinstance(e, int) and len(iv.terms) == 1:
                out[next(iter(iv.terms))] = e
    return out


def _within(x: Optional["IndexExpr"], extent, bounds: Dict) -> bool:
    """Whether index `x` is provably in [0, extent): a constant, or a
    T.Parallel variable plus a constant, over a constant extent."""
    if x is None or not isinstance(extent, int):
        return False
    if x.is_const():
        return 0 <= x.const < extent
    if len(x.terms) != 1:
        return False
    (atom, coeff), = x.terms.items()
    e = bounds.get(atom)
    return e is not None and coeff == 1 and x.const >= 0 and x.const + e <= extent


def select(cond, a, b):
    """cond ? a : b on runtime values (T.if_then_else; lane by lane)."""
    cond, a, b = _vector_ref(cond), _vector_ref(a), _vector_ref(b)
    return _lanewise(_select_scalar, cond, a, b)


def _select_scalar(cond, a, b):
    """cond ? a : b on runtime values (T.if_then_else)."""
    cond = _unwrap_ref(cond)
    if not isinstance(cond, (Scalar, IndexExpr)):
        return a if cond else b
    c = to_scalar(cond, dt.boolean)
    a, b = _unwrap_ref(a), _unwrap_ref(b)
    dtype = _common_dtype(a, b)
    sa, sb = to_scalar(a, dtype), to_scalar(b, dtype)
    return Scalar(_arith().SelectOp(c.value, sa.value, sb.value).result, dtype)


def to_index(x, what: str = "index") -> IndexExpr:
    """Turns an integer value into an IndexExpr (loads and int scalars are
    cast to `index`)."""
    x = _unwrap_ref(x)
    if isinstance(x, IndexExpr):
        return x
    if isinstance(x, bool):
        raise _error(f"{what} must be an integer, got a bool")
    if isinstance(x, int):
        return IndexExpr(x)
    if isinstance(x, float):
        if x.is_integer():
            return IndexExpr(int(x))
        raise _error(f"{what} must be an integer, got {x}")
    if isinstance(x, Scalar):
        if x.dtype.is_float:
            raise _error(f"{what} must be an integer, got a {x.dtype} value")
        known = _constant_of(x.value)
        if known is not None and not x.dtype.is_bool:
            if x.dtype.kind == "uint":  # the constant holds the bit pattern
                known &= (1 << x.dtype.bits) - 1
            return IndexExpr(known)  # T.int32(-1): a constant index
        if x.dtype.kind == "index":
            return IndexExpr.of(x.value)
        return IndexExpr.of(_convert_value(x.value, x.dtype, dt.index))
    raise _error(f"{what} must be an integer, got {_describe(x)}")


def _constant_of(value) -> Optional[int]:
    """The integer of an `arith.constant` SSA value, else None."""
    ir = _ir()
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    return int(ir.IntegerAttr(attr).value) if isinstance(attr, ir.IntegerAttr) else None


def static_int(x, what: str) -> int:
    """A compile-time integer, or an error naming `what`."""
    x = _unwrap_ref(x)
    if isinstance(x, IndexExpr) and x.is_const():
        return x.const
    if isinstance(x, bool) or not isinstance(x, int):
        if isinstance(x, float) and x.is_integer():
            return int(x)
        raise _error(f"{what} must be a compile-time integer, got {_describe(x)}")
    return x


# ---------------------------------------------------------------------------
# Buffers
# ---------------------------------------------------------------------------


class Buffer(Operators):
    """A tile buffer: a global tensor argument or an allocation in a scope."""

    def __init__(self, value, shape: Sequence, dtype: DType, scope: str, name: str = ""):
        self.value = value
        self.shape = tuple(shape)  # ints, or IndexExpr for dynamic sizes
        self.dtype = dt.as_dtype(dtype)
        self.scope = scope
        self.name = name
        self.stores = 0  # scalar stores emitted so far (see symbolic_form)
        # A T.Layout annotated on a global tensor: logical index -> the index
        # of the memref the element is stored at (None: the identity).
        self.remap = None
        # A T.SymmetricTensor argument: the IR value of its peer table.
        self.peers = None
        # T.annotate_safe_value: what an out-of-range element read of this
        # global tensor gives (None: zero), in the kernel that annotated it.
        self.safe_value = None
        # A T.StridedTensor argument (its memref has a strided layout): tile
        # operations take it element by element.
        self.strided = False
        # Elements a byte (4-bit types: 2): the memref holds bytes, the last
        # dimension divided by it; elements are read and written as nibbles.
        self.pack = self.dtype.pack
        # T.view(X, shape, dtype) of another dtype: (X, k), an element being
        # the bits of k elements of X (k > 0) or of 1/-k of one (k < 0).
        self.bitview = None

    def __repr__(self):
        return f"Buffer({self.name!r}, {self.shape}, {self.dtype}, {self.scope})"

    @property
    def data(self) -> "BufferData":
        """The storage of this buffer, for a view: T.Tensor(shape, dtype, X.data)."""
        return BufferData(self)

    def peer(self, rank) -> "Buffer":
        """Rank `rank`'s part of this symmetric buffer (a T.SymmetricTensor
        argument): a global buffer of the same shape on that rank's GPU,
        read and written like any tensor argument (T.copy, element
        accesses, T.signal / T.wait on a flag)."""
        if self.peers is None:
            raise _error(f"{self.name!r} is not a symmetric buffer: X.peer(rank) needs a "
                         "T.SymmetricTensor argument (allocated by every rank, "
                         "tilelang_mlir.distributed)")
        if self.remap is not None:
            raise _error(f"{self.name!r}.peer(rank): a symmetric buffer cannot carry a T.Layout")
        from ..dialects import tile

        ir = _ir()
        rank_index = to_index(rank, f"the rank of {self.name!r}.peer(rank)").materialize()
        local_type = ir.MemRefType(self.value.type)
        shape = list(local_type.shape)
        strides, stride = [], 1
        for d in reversed(range(len(shape))):
            strides.insert(0, stride)
            dyn = ir.ShapedType.get_dynamic_size()
            stride = dyn if stride == dyn or shape[d] == dyn else stride * shape[d]
        text = ", ".join(str(s) if s != ir.ShapedType.get_dynamic_size() else "?" for s in strides)
        layout = ir.Attribute.parse(f"strided<[{text}], offset: ?>")
        view_type = ir.MemRefType.get(shape, local_type.element_type, layout)
        view = tile.PeerOp(view_type, self.value, self.peers, rank_index).result
        return Buffer(view, self.shape, self.dtype, "global", f"{self.name}.peer")

    def stored_index(self, indices: List[IndexExpr]) -> List[IndexExpr]:
        """Where the element at logical `indices` is stored."""
        return indices if self.remap is None else self.remap(indices)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def static_shape(self, what: str) -> List[int]:
        out = []
        for d in self.shape:
            if isinstance(d, IndexExpr):
                if not d.is_const():
                    raise _error(f"{what}: buffer {self.name!r} has a dynamic shape; "
                                 "give the region with slices or point indices")
                d = d.const
            out.append(d)
        return out

    def __getitem__(self, key) -> "BufferRef":
        if not isinstance(key, tuple):
            key = (key,)
        return BufferRef(self, key)

    def __setitem__(self, key, value) -> None:
        """`X[i] = v` in Python that runs as Python (a helper a program
        calls, a meta_class method): the store."""
        self[key].store(value)

    # A rank-0 `var` buffer behaves as its value in expressions.
    def load(self) -> Scalar:
        if self.ndim != 0:
            raise _error(f"buffer {self.name!r} of shape {self.shape} used as a "
                         "scalar; index it")
        return BufferRef(self, ()).load()


class LetVar:
    """`v = T.int32()` in a tile program: a variable bound later by
    `T.let(v, value)`; it stands for its value wherever it is used."""

    def __init__(self, dtype: DType, name: str = ""):
        self.dtype = dt.as_dtype(dtype)
        self.name = name
        self.bound = None  # the value, once T.let bound it

    def value(self):
        if self.bound is None:
            raise _error(f"the variable T.{self.dtype}() {self.name} is used before T.let "
                         "binds it to a value")
        return self.bound

    def __repr__(self):
        return f"LetVar({self.dtype})"


class BufferData:
    """`X.data`: the storage of buffer X (what TileLang's views take)."""

    def __init__(self, buffer: "Buffer"):
        self.buffer = buffer

    def __repr__(self):
        return f"{self.buffer.name}.data"


class BufferRef(Operators):
    """`buffer[indices]`: a load when used as a value, a region (its start, or
    slices) when passed to a tile operation."""

    def __init__(self, buffer: Buffer, items: tuple):
        self.buffer = buffer
        self.items = items

    def __repr__(self):
        return f"{self.buffer.name}[{', '.join(map(str, self.items))}]"

    @property
    def dtype(self):
        """The element type (TVM's BufferLoad.dtype: code written for TVM
        checks `buf[i].dtype == "uint8"`); a vector access's (one sliced or
        T.Ramp dimension) is the vector dtype; a region of several sliced
        dimensions (TVM's BufferRegion, a tile operation's operand) has its
        buffer's element dtype."""
        if sum(isinstance(i, (slice, Vector)) for i in self.items) == 1:
            return self.load().dtype
        return self.buffer.dtype

    def _point_indices(self, what: str) -> List[IndexExpr]:
        items = self.items
        b = self.buffer
        if b.ndim == 0:
            if items in ((), (0,)) or (len(items) == 1 and
                                       isinstance(items[0], IndexExpr) and
                                       items[0] == IndexExpr(0)):
                return []
            raise _error(f"scalar buffer {b.name!r} can only be indexed with [0]")
        if len(items) != b.ndim:
            raise _error(f"{what} buffer {b.name!r} of rank {b.ndim} with "
                         f"{len(items)} indices")
        out = []
        for i, item in enumerate(items):
            if isinstance(item, (slice, Vector)):
                raise _error(f"{what} a slice of buffer {b.name!r}; slices are "
                             "regions for tile operations such as T.copy")
            out.append(_wrap_negative(to_index(item, f"index {i} of {b.name!r}"), b.shape[i]))
        return out

    def is_vector(self) -> bool:
        """Whether this access reads or writes several elements as one
        vector value (a slice, or a T.Ramp index)."""
        return any(isinstance(i, (slice, Vector)) for i in self.items)

    def _lane_indices(self, what: str) -> List[List[IndexExpr]]:
        """The index of each lane of a vector access: a slice gives its
        positions, a T.Ramp its lanes (lane counts must agree), a point the
        same index for every lane. A lane that may be negative wraps around
        (TileLang's rule for vector indices: lane < 0 reads lane + extent)."""
        b = self.buffer
        if len(self.items) != b.ndim:
            raise _error(f"{what} buffer {b.name!r} of rank {b.ndim} with "
                         f"{len(self.items)} indices")
        per_dim, lanes = [], None
        for i, item in enumerate(self.items):
            if isinstance(item, slice):
                start, extent = self._slice(i, item)
                values = [start.add(IndexExpr(k)) for k in range(extent)]
            elif isinstance(item, Vector):
                values = [_wrap_negative(to_index(x, f"lane of index {i} of {b.name!r}"),
                                         b.shape[i], select_unknown=True) for x in item.lanes]
            else:
                per_dim.append(None)
                continue
            if lanes is not None and len(values) != lanes:
                raise _error(f"{what} buffer {b.name!r}: its vector indices have {lanes} and "
                             f"{len(values)} lanes")
            lanes = len(values)
            per_dim.append(values)
        if lanes > MAX_LANES:
            raise _error(f"{what} {lanes} elements of {b.name!r} as one vector value (at most "
                         f"{MAX_LANES}); use T.copy or a loop")
        points = [None if d is not None else
                  _wrap_negative(to_index(item, f"index {i} of {b.name!r}"), b.shape[i])
                  for i, (d, item) in enumerate(zip(per_dim, self.items))]
        return [[d[k] if d is not None else p for d, p in zip(per_dim, points)]
                for k in range(lanes)]

    def load(self):
        """The element (a Scalar), or for a vector access the Vector of its
        elements."""
        from ..dialects import memref

        if self.is_vector():
            return Vector([BufferRef(self.buffer, tuple(idx)).load()
                           for idx in self._lane_indices("cannot load from")])
        if self.buffer.bitview is not None:
            return _load_bitview(self.buffer, self._point_indices("cannot load from"))
        if lane_vector(self.buffer.dtype):
            idx = [i.materialize() for i in self._point_indices("cannot load from")]
            element = self.buffer.dtype.element
            return Vector([from_storage(memref.LoadOp(self.buffer.value, idx + [
                IndexExpr(k).materialize()]).result, element)
                for k in range(self.buffer.dtype.lanes)])
        idx = self.buffer.stored_index(self._point_indices("cannot load from"))
        if self.buffer.pack > 1:
            return _load_packed(self.buffer, idx)
        if _byte_vector(self.buffer.dtype):  # the byte's lanes, the first in the low bits
            raw = memref.LoadOp(self.buffer.value, [i.materialize() for i in idx]).result
            element = self.buffer.dtype.element
            lanes = []
            for k in range(self.buffer.dtype.lanes):
                bits = _arith().ShRUIOp(raw, constant(k * element.bits, dt.int8)).result
                lanes.append(Scalar(_arith().TruncIOp(ir_type(element), bits).result, element))
            return Vector(lanes)
        indices = [i.materialize() for i in idx]
        guard = getattr(state.current(), "load_guard", None) if state.active() else None
        if guard is not None and self.buffer.scope.startswith("shared"):
            # A side of T.if_then_else reads only where it is taken (TVM's
            # if_then_else, the guard of out-of-bounds reads: `s[i - 1]`
            # under `i > 0`): elsewhere it reads element 0, whose value the
            # select drops.
            zero = IndexExpr(0).materialize()
            bounds = _parallel_bounds()
            indices = [i if _within(IndexExpr.lift(j), extent, bounds)
                       else _arith().SelectOp(guard.value, i, zero).result
                       for i, j, extent in zip(indices, idx,
                                               _ir().MemRefType(self.buffer.value.type).shape)]
        load = memref.LoadOp(self.buffer.value, indices)
        if self.buffer.safe_value is not None and self.buffer.scope == "global":
            load.operation.attributes["tile.safe_value"] = storage_constant(
                self.buffer.safe_value, self.buffer.dtype)
        return from_storage(load.result, self.buffer.dtype)

    def store(self, value) -> None:
        from ..dialects import memref

        if self.is_vector():
            lanes = self._lane_indices("cannot store into")
            value = _vector_ref(_unwrap_ref(value) if isinstance(value, LetVar) else value)
            if isinstance(value, Vector):
                if len(value) != len(lanes):
                    raise _error(f"cannot store a vector of {len(value)} lanes into "
                                 f"{len(lanes)} elements of {self.buffer.name!r}")
                values = value.lanes
            else:  # a scalar into a region: every element
                values = [to_scalar(value, self.buffer.dtype)] * len(lanes)
            for idx, v in zip(lanes, values):
                BufferRef(self.buffer, tuple(idx)).store(v)
            return
        self.buffer.stores += 1
        if self.buffer.bitview is not None:
            _store_bitview(self.buffer, self._point_indices("cannot store into"), value)
            return
        if lane_vector(self.buffer.dtype):
            dtype = self.buffer.dtype
            value = _unwrap_ref(_vector_ref(value))
            if isinstance(value, Vector):
                if len(value) != dtype.lanes:
                    raise _error(f"a store into {self.buffer.name!r} ({dtype}) takes a vector "
                                 f"of {dtype.lanes} lanes, got {len(value)}")
                values = value.lanes
            else:  # a scalar: broadcast to every lane
                values = [value] * dtype.lanes
            idx = [i.materialize() for i in self._point_indices("cannot store into")]
            for k, v in enumerate(values):
                memref.StoreOp(to_storage(v, dtype.element), self.buffer.value,
                               idx + [IndexExpr(k).materialize()])
            return
        if _byte_vector(self.buffer.dtype):
            dtype = self.buffer.dtype
            value = _vector_ref(_unwrap_ref(value))
            if not isinstance(value, Vector) or len(value) != dtype.lanes:
                raise _error(f"a store into {self.buffer.name!r} ({dtype}) takes a vector of "
                             f"{dtype.lanes} lanes, got {_describe(value)}")
            i8 = _ir().IntegerType.get_signless(8)
            byte = None
            for k, lane in enumerate(value.lanes):
                part = _arith().ExtUIOp(i8, to_scalar(lane, dtype.element).value).result
                if k:
                    part = _arith().ShLIOp(part, constant(k * dtype.element.bits, dt.int8)).result
                byte = part if byte is None else _arith().OrIOp(byte, part).result
            idx = self.buffer.stored_index(self._point_indices("cannot store into"))
            memref.StoreOp(byte, self.buffer.value, [i.materialize() for i in idx])
            return
        idx = self.buffer.stored_index(self._point_indices("cannot store into"))
        if self.buffer.pack > 1:
            _store_packed(self.buffer, idx, value)
            return
        memref.StoreOp(to_storage(value, self.buffer.dtype), self.buffer.value,
                       [i.materialize() for i in idx])

    def bounds(self) -> List[Tuple[IndexExpr, Optional[IndexExpr]]]:
        """(start, extent) of each dimension, the extent an index value that
        may be known only at run time (None for a point index)."""
        b = self.buffer
        out = []
        for i, item in enumerate(self.items):
            if isinstance(item, slice):
                if item.step is not None:
                    raise _strided_slice(b)
                start = to_index(0 if item.start is None else item.start)
                stop = to_index(b.shape[i]) if item.stop is None else to_index(item.stop)
                out.append((start, stop.add(start, -1)))
            else:
                out.append((_wrap_negative(to_index(item, f"index {i} of {b.name!r}"),
                                           b.shape[i]), None))
        return out

    def dynamic_region(self) -> bool:
        """Whether a slice's extent is known only at run time."""
        try:
            self.offsets_extents()
        except TileLangError:
            return any(isinstance(i, slice) for i in self.items) and len(self.items) == \
                self.buffer.ndim
        return False

    def _slice(self, i: int, item: slice) -> Tuple[IndexExpr, int]:
        """(start, static extent) of slice `item` of dimension `i`."""
        b = self.buffer
        if item.step is not None:
            raise _strided_slice(b)
        start = to_index(0 if item.start is None else item.start)
        if item.stop is None:
            dim = b.shape[i]
            stop = dim if isinstance(dim, IndexExpr) else IndexExpr(dim)
        else:
            stop = to_index(item.stop)
        extent = stop.add(start, -1)
        if not extent.is_const() and item.start is not None and item.stop is not None:
            fa, fb = symbolic_form(item.stop), symbolic_form(item.start)
            if fa is not None and fb is not None:
                symbolic = fa.add(fb, -1)
                if symbolic.is_const():
                    extent = symbolic
        if not extent.is_const():
            raise _error(f"the extent of slice {i} of {b.name!r} must be a "
                         f"compile-time constant, got {extent}")
        if extent.const <= 0:
            raise _error(f"slice {i} of {b.name!r} is empty")
        return start, extent.const

    @property
    def region(self) -> List["RegionRange"]:
        """TVM's `BufferRegion.region`, as TileLang code reads a slice it is
        given (`[int(r.extent) for r in ref.region]`): a range (`min`,
        `extent`) per dimension, extent 1 at a point index."""
        offsets, extents = self.offsets_extents()
        return [RegionRange(o, 1 if e is None else e) for o, e in zip(offsets, extents)]

    def offsets_extents(self) -> Tuple[List[IndexExpr], List[Optional[int]]]:
        """Offsets and extents; an extent is None for a point index (the
        extent then comes from the other side of the operation)."""
        b = self.buffer
        if len(self.items) != b.ndim:
            raise _error(f"buffer {b.name!r} of rank {b.ndim} indexed with "
                         f"{len(self.items)} indices")
        offsets, extents = [], []
        for i, item in enumerate(self.items):
            if isinstance(item, Vector):
                raise _error(f"a T.Ramp index of {b.name!r} names elements one by one; tile "
                             "operations take slices")
            if isinstance(item, slice):
                start, extent = self._slice(i, item)
                offsets.append(start)
                extents.append(extent)
            else:
                offsets.append(_wrap_negative(to_index(item, f"index {i} of {b.name!r}"),
                                              b.shape[i]))
                extents.append(None)
        return offsets, extents


class RegionRange:
    """One dimension of a buffer region (TVM's `Range`): `min`, `extent`."""

    __slots__ = ("min", "extent")

    def __init__(self, min, extent):  # noqa: A002 (TVM's field name)
        self.min, self.extent = min, extent

    def __repr__(self) -> str:
        return f"Range(min={self.min!r}, extent={self.extent!r})"


def _wrap_negative(index: IndexExpr, extent, select_unknown: bool = False):
    """TileLang's negative indices: an index that is negative for certain
    (a constant) counts from the end (`A[-1]` is the last element); with
    `select_unknown` (the lanes of a vector index), one that may be
    negative (not a sum of nonnegative terms) reads `index + extent` when
    negative."""
    if index.is_const():
        return index.add(to_index(extent)) if index.const < 0 else index
    if not select_unknown or (index.const >= 0 and all(c > 0 for c in index.terms.values())):
        return index
    wrapped = select(compare("<", index, 0), index.add(to_index(extent)), index)
    return to_index(wrapped)


_SIZE_VARS = [0]  # how many anonymous symbolic sizes `T.int32()` has made


class PointerVar:
    """`T.ptr()` outside a program: a pointer argument without a value (TVM's
    handle variable), what `compile`/`par_compile` take for a `T.ptr`
    parameter whose address only the call gives."""

    dtype = "handle"

    def __repr__(self) -> str:
        return "T.ptr()"


def _dtype_call(dtype: DType, *args, is_size_var: bool = False):
    """What calling a dtype does: `T.float32(x)` is `T.cast(x, T.float32)`
    (a Python number stays one outside a program); `T.int32()` outside a
    program is an anonymous symbolic size (TVM's size variable)."""
    if not args:
        if state.active():  # a variable T.let binds later
            return LetVar(dtype)
        if dtype.kind == "handle":  # T.ptr(): a pointer argument without a value yet
            return PointerVar()
        if not dtype.is_int:
            raise TypeError(f"T.{dtype}() (a variable without a value) is a symbolic size, "
                            "which needs an integer dtype")
        from ..base.signature import SymbolicDim

        _SIZE_VARS[0] += 1
        return SymbolicDim(f"v{_SIZE_VARS[0]}", dtype)
    if len(args) > 1:  # T.float16x2(a, b): a vector of the lanes
        if dtype.lanes not in (1, len(args)):
            raise _error(f"T.{dtype} has {dtype.lanes} lanes, got {len(args)} values")
        return Vector([to_scalar(_unwrap_ref(a), dtype.element) for a in args])
    x = args[0]
    if not state.active() and isinstance(x, int) and not isinstance(x, bool) and dtype.is_int \
            and dtype.lanes == 1 and dtype.kind != "index":
        lo, hi = ((0, 2 ** dtype.bits - 1) if dtype.is_unsigned
                  else (-(2 ** (dtype.bits - 1)), 2 ** (dtype.bits - 1) - 1))
        if not lo <= x <= hi:
            raise ValueError(f"T.{dtype}({x}): the value does not fit in {dtype}")
    return cast(x, dtype)


# `T.float32(x)` is `T.cast(x, T.float32)` (the bottom layer's DType cannot
# import this layer, so the cast is installed here).
dt.set_call_handler(_dtype_call)


# Element access through packing and views (and the row-major index
# arithmetic of views) lives in element_access.py, which needs the classes
# above; imported last, and re-exported under its old names here.
from .element_access import (_load_bitview, _load_packed, _store_bitview,  # noqa: E402,F401
                             _store_packed, reassociate, reshape_index, row_major_index,
                             row_major_position)
