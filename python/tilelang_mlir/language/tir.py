"""TVM-level names that TileLang programs reach through `T.*`.

TileLang re-exports TVM's TIR builtins (`T.call_extern`, `T.attr`,
`T.evaluate`, `T.tvm_thread_allreduce`, ...). tilelang-mlir has no TIR
underneath; where a name has a tile-level meaning it is implemented here,
otherwise it raises an error that names the feature and, where there is
one, the tile-level way to write it.
"""

from __future__ import annotations

import contextlib

from ..base import dtypes as dt
from ..base.errors import TileLangError, program_error
from ..base.signature import SymExpr
from . import math as tmath
from . import state
from .values import (MAX_LANES, Buffer, BufferRef, IndexExpr, LetVar, Scalar, Vector, binary,
                     cast, is_runtime, to_scalar, _describe, _unwrap_ref)


def _unsupported(feature: str, hint: str = "") -> TileLangError:
    b = state.current() if state.active() else None
    message = f"not supported by tilelang-mlir: {feature}" + (f"; {hint}" if hint else "")
    return TileLangError(message, b.source_location() if b else None)


# C and CUDA math functions that T.call_extern may name, and their tile math.
_EXTERN_MATH = {}
for _names, _fn in (
        (("exp", "expf", "__expf", "hexp"), tmath.exp),
        (("exp2", "exp2f", "__exp2f", "hexp2"), tmath.exp2),
        (("log", "logf", "__logf", "hlog"), tmath.log),
        (("log2", "log2f", "__log2f", "hlog2"), tmath.log2),
        (("sqrt", "sqrtf", "__fsqrt_rn", "hsqrt"), tmath.sqrt),
        (("rsqrt", "rsqrtf", "__frsqrt_rn", "hrsqrt"), tmath.rsqrt),
        (("tanh", "tanhf"), tmath.tanh),
        (("sin", "sinf", "__sinf", "hsin"), tmath.sin),
        (("cos", "cosf", "__cosf", "hcos"), tmath.cos),
        (("erf", "erff"), tmath.erf),
        (("floor", "floorf", "hfloor"), tmath.floor),
        (("ceil", "ceilf", "hceil"), tmath.ceil),
        (("fabs", "fabsf", "abs", "__habs"), tmath.abs),
        (("fmax", "fmaxf", "max", "__hmax"), tmath.max),
        (("fmin", "fminf", "min", "__hmin"), tmath.min),
        (("pow", "powf", "__powf"), tmath.pow),
        (("exp10", "exp10f", "hexp10"), tmath.exp10), (("__exp10f",), tmath.__exp10),
        (("log10", "log10f", "hlog10"), tmath.log10), (("__log10f",), tmath.__log10),
        (("log1p", "log1pf"), tmath.log1p),
        (("tan", "tanf", "htan"), tmath.tan), (("__tanf",), tmath.__tan),
        (("sinh", "sinhf"), tmath.sinh), (("cosh", "coshf"), tmath.cosh),
        (("asin", "asinf"), tmath.asin), (("acos", "acosf"), tmath.acos),
        (("atan", "atanf"), tmath.atan), (("atan2", "atan2f"), tmath.atan2),
        (("asinh", "asinhf"), tmath.asinh), (("acosh", "acoshf"), tmath.acosh),
        (("atanh", "atanhf"), tmath.atanh),
        (("trunc", "truncf", "htrunc"), tmath.trunc),
        (("rint", "rintf", "nearbyint", "nearbyintf", "hrint"), tmath.nearbyint),
        (("round", "roundf"), lambda x: tmath.round(x, "ties-away-from-zero")),
        (("fmod", "fmodf"), tmath.fmod), (("copysign", "copysignf"), tmath.copysign),
        (("hypot", "hypotf"), tmath.hypot),
        (("__frcp_rn",), tmath.ieee_frcp), (("__fdividef",), lambda a, b: binary("/", a, b))):
    for _name in _names:
        _EXTERN_MATH[_name] = _fn


def _dtype_first(fn):
    """TileLang's `T.call_extern(name, *args, dtype=...)` spelling: a
    `dtype` keyword is the first positional argument."""
    import functools

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if "dtype" in kwargs:
            args = (kwargs.pop("dtype"),) + args
        return fn(*args, **kwargs)

    return wrapped


@_dtype_first
def call_extern(dtype, func_name, *args, span=None):
    """`T.call_extern(dtype, "expf", x)`: a call of an external C/CUDA
    function. The math functions of C and CUDA (expf, __expf, log2f, sqrtf,
    fmaxf, ...) map onto the tile math and give a `dtype` result; any other
    name is a CUDA device function, a builtin (`__nanosleep`, `__popc`,
    `clock64`, ...) or one of the program's CUDA source (`T.import_source`),
    which the executing thread calls (CUDA targets: NVRTC compiles a
    wrapper, and the source, into the kernel). Arguments are scalars and
    `T.access_ptr(buffer[...], "r"/"w"/"rw")` pointers into local, shared
    or global buffers; `dtype` "handle" when the function returns nothing."""
    if not isinstance(func_name, str):
        raise _unsupported(f"T.call_extern with function name {func_name!r}",
                           "give the result dtype first: T.call_extern(dtype, name, *args)")
    fn = _EXTERN_MATH.get(func_name)
    if fn is None:
        b = state.current() if state.active() else None
        if b is None:
            raise _unsupported(f"T.call_extern of the external function {func_name!r} "
                               "outside a tile program")
        return b.call_extern(dtype, func_name, args)
    try:
        result_dtype = dt.as_dtype(dtype)
    except TypeError:
        raise _unsupported(f"T.call_extern({dtype!r}, {func_name!r}, ...): result dtype "
                           f"{dtype!r}") from None
    # The C function computes in its own type (expf: float32), then converts.
    arg_dtype = result_dtype if result_dtype.is_float else dt.float32
    values = [to_scalar(a, arg_dtype) if is_runtime(a) or state.active() else a for a in args]
    return cast(fn(*values), result_dtype)


@_dtype_first
def call_intrin(dtype, op_name, *args, span=None):
    """TVM's intrinsic call: not supported here (raises a TileLangError naming
    the intrinsic)."""
    raise _unsupported(f"T.call_intrin of TVM intrinsic {op_name!r}")


@_dtype_first
def call_pure_extern(dtype, func_name, *args, span=None):
    """Like T.call_extern (a call without side effects)."""
    return call_extern(dtype, func_name, *args)


def import_source(source=None):
    """`T.import_source(cuda_source)` inside a kernel: CUDA C++ device
    functions that T.call_extern then calls (compiled with NVRTC and linked
    into the kernel on CUDA targets; TileLang's types half_t, bfloat16_t,
    fp8_e4_t, uint and its __pack_half2 are defined for it)."""
    b = state.current() if state.active() else None
    if b is None:
        raise _unsupported("T.import_source outside a tile program")
    b.import_source(source)


def constant_int(x):
    """The integer of `x` when it is known at compile time (a Python int,
    a constant index expression, a constant scalar such as T.uint32(1)),
    else None."""
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        return x
    if isinstance(x, IndexExpr) and x.is_const():
        return x.const
    if isinstance(x, Scalar) and not x.dtype.is_float:
        owner = x.value.owner
        if getattr(owner, "name", "") == "arith.constant":
            from .. import ir

            return ir.IntegerAttr(owner.attributes["value"]).value
    return None


class Handle:
    """TVM's opaque handle value (`T.reinterpret(T.uint64(0), dtype="handle")`,
    the null handle of a reduce scope): it has no use in tile programs but
    as that argument."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"handle({self.value})"


class CommReducer:
    """`T.comm_reducer(combiner, identity)`: the reduction of a
    T.tvm_thread_allreduce (`combiner(x, y)` on scalars, `identity` its
    neutral values)."""

    def __init__(self, combiner, identity):
        if not callable(combiner):
            raise _unsupported(f"T.comm_reducer with combiner {combiner!r}",
                               "pass a function of two values, such as lambda x, y: x + y")
        self.combiner = combiner
        self.identity = list(identity) if isinstance(identity, (list, tuple)) else [identity]

    def combine(self, x, y):
        return self.combiner(x, y)

    def __repr__(self):
        return "T.comm_reducer(...)"


class _ReduceScope:
    """`with T.attr(reducer, "reduce_scope", ...)`: the T.tvm_thread_allreduce
    calls of the body reduce with `reducer`."""

    def __init__(self, reducer):
        self.reducer = reducer

    def __repr__(self):
        return "T.attr(..., 'reduce_scope', ...)"

    @contextlib.contextmanager
    def __tile_scope__(self, builder):
        saved = builder.reducer
        builder.reducer = self.reducer
        try:
            yield
        finally:
            builder.reducer = saved


class _AsyncScope:
    """`with T.attr(..., "async_scope", 1)`: TVM's asynchronous-copy scope.
    Its element copies from a global tensor into shared memory, a
    T.vectorized loop of 4, 8 or 16 bytes each, are issued as cp.async by
    the executing thread (TVM's InjectPTXAsyncCopy); they land at
    T.ptx_wait_group or arrive on a barrier through
    T.cp_async_barrier_noinc."""

    def __repr__(self):
        return "T.attr(..., 'async_scope', 1)"

    @contextlib.contextmanager
    def __tile_scope__(self, builder):
        saved = getattr(builder, "async_scope", False)
        builder.async_scope = True
        try:
            yield
        finally:
            builder.async_scope = saved


def attr(node, attr_key, value):
    """TVM's IR attribute statement. `with T.attr(T.comm_reducer(f, [id]),
    "reduce_scope", ...)` is the scope of a T.tvm_thread_allreduce with
    reduction `f`; `with T.attr(..., "async_scope", 1)` issues the vectorized
    global-to-shared copies of its body as cp.async (_AsyncScope); other keys
    are TVM IR and raise."""
    if attr_key == "reduce_scope" and isinstance(node, CommReducer):
        return _ReduceScope(node)
    if attr_key == "async_scope":
        return _AsyncScope()
    raise _unsupported(f"T.attr (a TVM IR attribute, key {attr_key!r})",
                       "cross-thread reductions are T.reduce_sum / T.reduce_max on a fragment, "
                       "or T.warp_reduce_sum / ... on a thread's value")


def evaluate(value):
    """TVM's expression statement `T.evaluate(expr)`: the expression has
    been evaluated (and whatever it emits, emitted) when its argument was;
    the value is dropped."""
    return None


def comm_reducer(combiner, identity, span=None):
    """A reduction for T.tvm_thread_allreduce: `combiner(x, y)` combines two
    values, `identity` (a list of one value) is its neutral element."""
    return CommReducer(combiner, identity)


def tvm_thread_allreduce(*args, dtype=None):
    """`T.tvm_thread_allreduce(T.uint32(1), value, True, dest, tx, ...)` in
    a `T.attr(reducer, "reduce_scope", ...)` scope: every thread gets the
    reduction of `value` over the threads that differ from it along the
    thread indices `tx, ...` (T.get_thread_binding), stored in `dest`
    (warp shuffles; shared memory across warps)."""
    b = state.current() if state.active() else None
    if b is None:
        raise _unsupported("T.tvm_thread_allreduce outside a tile program")
    if b.reducer is None:
        raise TileLangError("T.tvm_thread_allreduce needs a reduction: call it in `with "
                            "T.attr(T.comm_reducer(f, [identity]), \"reduce_scope\", ...)`",
                            b.source_location())
    if not args:
        raise TileLangError("T.tvm_thread_allreduce needs its arguments", b.source_location())
    n = constant_int(args[0])
    if n is None:
        raise TileLangError("T.tvm_thread_allreduce: the count of values must be a constant",
                            b.source_location())
    rest = list(args[1:])
    if len(rest) < 2 * n + 1:
        raise TileLangError(f"T.tvm_thread_allreduce of {n} value(s) needs the values, the "
                            "condition, the destinations and the thread indices",
                            b.source_location())
    values, cond, dests, reduce_vars = rest[:n], rest[n], rest[n + 1:2 * n + 1], rest[2 * n + 1:]
    b.thread_allreduce(b.reducer, values, cond, dests, reduce_vars)


def make_tensor(ptr, shape, dtype="float32", strides=None, elem_offset=None, scope="global"):
    """`T.make_tensor(ptr, shape, dtype)`: the row-major global tensor of
    `shape` and `dtype` at device address `ptr` (a `T.ptr` argument, or an
    element of a `T.Tensor([n], T.ptr)` table of `tensor.data_ptr()`s),
    read and written like a tensor argument. Inside or outside `T.Kernel`;
    the sizes may be run-time values. The program vouches that the address
    holds such a tensor, as in TileLang."""
    b = state.current() if state.active() else None
    if b is None:
        raise _unsupported("T.make_tensor outside a tile program")
    return b.make_tensor(ptr, shape, dtype, strides, elem_offset, scope)


def make_tensor_from_addr(addr, shape, dtype="float32", strides=None, storage_scope="global"):
    """`T.make_tensor_from_addr(addr, shape, dtype)`: T.make_tensor under
    TileLang's name for a tensor at an address computed as an integer (a
    64-bit device address: a `T.ptr` argument, an element of a table of
    `data_ptr()`s, or arithmetic on one). Global tensors only
    (`storage_scope="global"`); row-major."""
    b = state.current() if state.active() else None
    if b is None:
        raise _unsupported("T.make_tensor_from_addr outside a tile program")
    if storage_scope != "global":
        raise TileLangError(f"T.make_tensor_from_addr makes global tensors, got "
                            f"storage_scope={storage_scope!r}", b.source_location())
    return b.make_tensor(addr, shape, dtype, strides, None, "global")


def address_of(ref):
    """`T.address_of(A[i, j])`: the 64-bit device address of that element of
    a global tensor (a `T.ptr` value), for T.make_tensor /
    T.make_tensor_from_addr (a tensor that starts there) and address
    arithmetic. A whole tensor means its first element."""
    b = state.current() if state.active() else None
    if b is None:
        raise _unsupported("T.address_of outside a tile program")
    return b.address_of(b.element_of(ref))


class _PtrProxy:
    """`T.Ptr(dtype)` / `T.Ptr[dtype]` (TileLang's deprecated spelling of a
    pointer parameter): a 64-bit device address, the same as `T.ptr`. The
    element type is the program's word only (checked to be a dtype); the
    tensor at the address gets its type from T.make_tensor. Global pointers
    only."""

    def __call__(self, dtype, storage_scope="global"):
        if callable(dtype) and not isinstance(dtype, (str, dt.DType)):
            dtype = dtype()
        try:
            dt.as_dtype(dtype)
        except TypeError as e:
            raise TileLangError(f"T.Ptr: {e}") from None
        if storage_scope != "global":
            raise TileLangError(f"not supported by tilelang-mlir: T.Ptr(..., "
                                f"storage_scope={storage_scope!r}); pointers are global "
                                "device addresses")
        return dt.handle

    def __getitem__(self, keys):
        return self(*keys) if isinstance(keys, tuple) else self(keys)

    def __repr__(self):
        return "T.Ptr"


Ptr = _PtrProxy()


def assume(cond):
    """T.assume(cond): a fact the compiler may use. A condition known at
    compile time is checked (a false one is an error); a runtime one is not
    used by tilelang-mlir's compiler (nothing is emitted), which is allowed:
    it only gives the compiler leave to rely on it."""
    if not is_runtime(cond) and not cond:
        raise TileLangError("T.assume: the condition is false at compile time",
                            state.current().source_location() if state.active() else None)
    if is_runtime(cond):
        to_scalar(cond, dt.boolean)  # a condition, not some other value


def dp4a(A, B, C):
    """`T.dp4a(a, b, c)`: c[0] += a[0]*b[0] + ... + a[3]*b[3], with `a`, `b`
    int8 positions (`A_local[k]`: four consecutive elements along the last
    dimension) and `c` an int32 position (a whole buffer means its first
    element, a T.alloc_var itself)."""
    refs = []
    for what, x, want in (("A", A, dt.int8), ("B", B, dt.int8), ("C", C, dt.int32)):
        if isinstance(x, Buffer):  # a whole buffer: its first element (a var: itself)
            x = BufferRef(x, (0,) * x.ndim)
        if not isinstance(x, BufferRef):
            raise TileLangError(f"T.dp4a: {what} must be a buffer position such as X[i], got "
                                f"{_describe(x)}", state.current().source_location())
        if x.buffer.dtype != want:  # a ValueError when the program is defined, as TileLang's
            role = "signed int8 inputs" if want == dt.int8 else "an int32 accumulator"
            raise program_error(f"T.dp4a requires {role}: {what} is {x.buffer.dtype} "
                                f"({x.buffer.name!r})", state.current().source_location(),
                                kind=ValueError, at_definition=True)
        refs.append(x)
    a, b, c = refs
    total = c.load()
    for k in range(4):
        ak = BufferRef(a.buffer, a.items[:-1] + (binary("+", a.items[-1], k),))
        bk = BufferRef(b.buffer, b.items[:-1] + (binary("+", b.items[-1], k),))
        total = binary("+", total, binary("*", to_scalar(ak, dt.int32), to_scalar(bk, dt.int32)))
    c.store(total)


def let(v, value, body=None):
    """`T.let(v, value)` binds `v`, a variable made by `v = T.int32()` in
    the program, to `value`: from here on `v` stands for it."""
    if body is not None:
        raise _unsupported("T.let(v, value, body) (a let expression)",
                           "bind the variable with T.let(v, value) and use it afterwards")
    if not isinstance(v, LetVar):
        raise TileLangError(f"T.let binds a variable made by `v = T.{'int32'}()` in the "
                            f"program, got {_describe(v)}",
                            state.current().source_location() if state.active() else None)
    if v.bound is not None:
        raise TileLangError("T.let: the variable is already bound",
                            state.current().source_location() if state.active() else None)
    v.bound = value if is_runtime(value) else cast(value, v.dtype) if state.active() else value
    return v


def has_let_value(var) -> bool:
    """Whether `var` (made by `T.int32()` in the program) is bound by T.let."""
    return isinstance(var, LetVar) and var.bound is not None


def get_let_value(var):
    """The value T.let bound `var` to, or None."""
    return var.bound if isinstance(var, LetVar) else None


def func_attr(attrs: dict):
    """TVM's function attributes (`T.func_attr({"tir.noalias": True})`):
    accepted; the compiler needs none of them (tensor arguments never alias
    here as far as it relies on)."""
    if not isinstance(attrs, dict):
        raise TileLangError(f"T.func_attr takes a dict, got {attrs!r}",
                            state.current().source_location() if state.active() else None)


class _PrimExprMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        from ..base.signature import SymExpr

        return isinstance(obj, (Scalar, IndexExpr, Buffer, BufferRef, SymExpr, LetVar))


class PrimExpr(metaclass=_PrimExprMeta):
    """TVM's expression class, for `isinstance(x, T.PrimExpr)`: true for the
    run-time values and symbolic sizes of a tile program (Python numbers
    are not)."""


def _lane_count(lanes, what: str) -> int:
    if isinstance(lanes, bool) or not isinstance(lanes, int) or not 1 <= lanes <= MAX_LANES:
        raise TileLangError(f"{what}: lanes must be an int in [1, {MAX_LANES}], got {lanes!r}",
                            state.current().source_location() if state.active() else None)
    return lanes


def Ramp(base, stride, lanes):  # noqa: N802 (TVM's name)
    """The index vector base, base + stride, ..., base + (lanes - 1) *
    stride: `A[T.Ramp(i, 1, 4)]` reads four elements as one vector value
    (a lane that may be negative counts from the end, as TileLang's
    negative indices)."""
    n = _lane_count(lanes, "T.Ramp")
    return Vector([binary("+", base, binary("*", stride, k)) for k in range(n)])


def Broadcast(value, lanes):  # noqa: N802 (TVM's name)
    """The vector of `lanes` copies of `value`."""
    n = _lane_count(lanes, "T.Broadcast")
    value = _unwrap_ref(value)
    if isinstance(value, Vector):
        raise TileLangError("T.Broadcast takes a scalar value, got a vector",
                            state.current().source_location() if state.active() else None)
    if not isinstance(value, IndexExpr):
        value = to_scalar(value)
    return Vector([value] * n)


class _ShuffleType(type):
    def __instancecheck__(cls, obj) -> bool:
        from .host_expr import HostShuffle

        return isinstance(obj, HostShuffle)


class Shuffle(metaclass=_ShuffleType):  # noqa: N801 (TVM's name)
    """`T.Shuffle(vectors, indices)`: the vector of lanes `indices` of the
    concatenation of `vectors`. `isinstance(x, T.Shuffle)` holds for
    T.extract_lane applied outside a program (TVM's Shuffle node)."""

    def __new__(cls, vectors, indices):
        pool = []
        for v in vectors:
            v = _unwrap_ref(v)
            pool.extend(v.lanes if isinstance(v, Vector) else [to_scalar(v)])
        out = []
        for i in indices:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(pool):
                raise TileLangError(f"T.Shuffle: lane index {i!r} is not in [0, {len(pool)})",
                                    state.current().source_location() if state.active() else None)
            out.append(pool[i])
        return Vector(out)


class _Frame:
    """TVM's TIR builder frames as TileLang programs write them:

        with T.If(cond):            with T.If(cond), T.Then():
            with T.Then(): ...          ...
            with T.Else(): ...      with T.While(cond): ...

    the program's `if` / `while` under TVM's names. The parser reads them
    where they stand in a `with` statement (frontend/parser.py); anywhere
    else they are an error."""

    name = ""

    def __enter__(self):
        raise _unsupported(f"T.{self.name}() outside a `with` statement of a tile program",
                           "TVM's TIR frames are parsed in `with T.If(...)` / `with T.Then()` "
                           "/ `with T.Else()` / `with T.While(...)` only")

    def __exit__(self, *exc):
        return False


class If(_Frame):  # noqa: N801 (TVM's name)
    """`with T.If(cond):` holding `with T.Then():` and, after it, `with
    T.Else():` (or `with T.If(cond), T.Then():`): the program's `if`."""

    name = "If"

    def __init__(self, condition, span=None):
        self.condition = condition


class Then(_Frame):  # noqa: N801 (TVM's name)
    """`with T.Then():` directly inside `with T.If(cond):`: the branch taken
    where cond holds."""

    name = "Then"

    def __init__(self, span=None):
        pass


class Else(_Frame):  # noqa: N801 (TVM's name)
    """`with T.Else():` after `with T.Then():` inside `with T.If(cond):`:
    the branch taken where cond does not hold."""

    name = "Else"

    def __init__(self, span=None):
        pass


class While(_Frame):  # noqa: N801 (TVM's name)
    """`with T.While(cond):`: the program's `while cond:` loop."""

    name = "While"

    def __init__(self, condition, span=None):
        self.condition = condition


def extract_lane(vector, lane):
    """Lane `lane` (a compile-time integer) of a vector value. Outside a
    program, of a tvm.tir.Var of a vector dtype, the expression of that lane
    (host_expr.py)."""
    from ..base.errors import TileLangIndexError, TileLangTypeError, TileLangValueError
    from . import host_expr

    if not state.active() and (host_expr.any_host((vector, lane)) or
                               isinstance(lane, SymExpr)):
        return host_expr.defer("extract_lane", extract_lane, (vector, lane), {},
                               state.outside_error())
    where = state.current().source_location() if state.active() else None
    vector = _unwrap_ref(vector)
    if isinstance(vector, (bool, int, float)) or vector is None:
        raise TileLangTypeError(f"T.extract_lane expects a PrimExpr vector, got "
                                f"{_describe(vector)}", where)
    if not isinstance(vector, Vector):
        raise TileLangValueError(f"T.extract_lane expects a vector expression, got "
                                 f"{_describe(vector)}", where)
    if isinstance(lane, bool) or not isinstance(lane, int):
        raise TileLangTypeError(f"T.extract_lane: the lane must be a compile-time integer, "
                                f"got {_describe(lane)}", where)
    if not 0 <= lane < len(vector):
        raise TileLangIndexError(f"T.extract_lane: lane {lane} is out of bounds for a vector "
                                 f"of {len(vector)} lanes", where)
    return vector.lanes[lane]


def likely(cond):
    """`T.likely(cond)`: `cond`, marked as the likely outcome of a branch
    (TVM's hint). The value is the condition itself; tilelang-mlir's
    compiler does not use the hint. A run-time condition must be a boolean
    or integer scalar."""
    cond = _unwrap_ref(cond)
    if isinstance(cond, Vector):
        raise TileLangError("T.likely takes a scalar condition, got a vector",
                            state.current().source_location() if state.active() else None)
    if is_runtime(cond) and not isinstance(cond, IndexExpr):
        c = to_scalar(cond)
        if not (c.dtype.is_int or c.dtype == dt.boolean):
            raise TileLangError(f"T.likely takes a boolean or integer condition, got {c.dtype}",
                                state.current().source_location() if state.active() else None)
        return c
    return cond


def var(dtype, name: str = ""):
    """`T.var(dtype, name)` (TVM's older spelling of `T.<dtype>()`): inside
    a tile program a variable that `T.let(v, value)` binds; outside one a
    symbolic size of an integer dtype, named `name` (as T.dynamic)."""
    d = dt.as_dtype(dtype)
    if not isinstance(name, str):
        raise TypeError(f"T.var: the name is a string, got {name!r}")
    if state.active():
        return LetVar(d, name)
    if not name:
        return d()
    if not d.is_int:
        raise TypeError(f"T.var({d!r}, {name!r}) outside a tile program is a symbolic size, "
                        "which needs an integer dtype")
    from ..base.signature import SymbolicDim

    return SymbolicDim(name, d)


class meta_var:  # noqa: N801 (TVM's name)
    """`x = T.meta_var(value)`: `value` as a compile-time (Python) value of
    the program: the name is bound to `value` itself, never to a run-time
    variable (TVM's script metaprogramming). Iterating one gives a
    meta_var per item, so `a, b = T.meta_var((x, y))` binds a and b."""

    def __init__(self, value):
        self.value = value

    def __iter__(self):
        return (meta_var(v) for v in self.value)

    def __repr__(self):
        return f"T.meta_var({self.value!r})"


def unwrap_meta(value):
    """`value` with every T.meta_var around it (or around the items of a
    tuple or list of them) taken off."""
    while isinstance(value, meta_var):
        value = value.value
    if isinstance(value, (tuple, list)) and any(isinstance(v, meta_var) for v in value):
        return type(value)(unwrap_meta(v) for v in value)
    return value


# TVM's lower-case spellings of the vector nodes.
broadcast = Broadcast
ramp = Ramp


__all__ = ["If", "Then", "Else", "While", "call_extern", "call_intrin", "call_pure_extern", "import_source", "attr",
           "evaluate", "comm_reducer", "tvm_thread_allreduce", "make_tensor",
           "assume", "dp4a", "let", "has_let_value",
           "get_let_value", "func_attr", "PrimExpr", "Ramp", "Broadcast", "Shuffle",
           "extract_lane", "likely", "var", "meta_var", "broadcast", "ramp"]
