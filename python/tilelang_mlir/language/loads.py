"""Element loads with CUDA's names: `T.__ldg(x[i])` (a load through the
read-only data cache on CUDA) and bit-position helpers of warp masks
(`T.__ffs`, `T.__fns`)."""

from __future__ import annotations

import builtins

from ..base import dtypes as dt
from .values import Buffer, BufferRef, Scalar, _error, _unwrap_ref, constant, is_runtime, to_scalar


def __ldg(load_or_buf, index=None):
    """The element `x[i]` read as CUDA's `__ldg(&x[i])` does (through the
    read-only data cache; the compiler already reads global tensors that
    the kernel does not write that way). `T.__ldg(x, i)` names the buffer
    and a flat index of a one-dimensional buffer."""
    if isinstance(load_or_buf, Buffer):
        if index is None:
            raise _error("T.__ldg(buffer, index) needs an index when given a buffer")
        if isinstance(index, (list, tuple)):
            if len(index) != 1:
                raise _error("T.__ldg(buffer, index) takes one (flattened) index, got "
                             f"{len(index)}")
            index = index[0]
        if load_or_buf.ndim != 1:
            raise _error(f"T.__ldg(buffer, index) of the rank-{load_or_buf.ndim} buffer "
                         f"{load_or_buf.name!r}: pass the element load instead "
                         f"(T.__ldg({load_or_buf.name}[i, j]))")
        load_or_buf = load_or_buf[index]
    if not isinstance(load_or_buf, BufferRef) or load_or_buf.is_vector():
        raise _error("T.__ldg expects an element load such as x[i], or a buffer and an "
                     f"index, got {load_or_buf!r}")
    return load_or_buf.load()


def __ffs(value):
    """CUDA's `__ffs` (`__ffsll` for 64-bit integers): the one-based position
    of the least significant set bit of `value`, 0 when it is zero. int32."""
    value = _unwrap_ref(value)
    if isinstance(value, BufferRef):
        value = value.load()
    if not is_runtime(value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise _error(f"T.__ffs needs an integer, got {value!r}")
        v = value & 0xFFFFFFFFFFFFFFFF
        return (v & -v).bit_length()
    s = to_scalar(value)
    if s.dtype.kind not in ("int", "uint") or s.dtype.bits not in (32, 64):
        raise _error(f"T.__ffs needs a 32- or 64-bit integer, got {s.dtype}")
    from ..dialects import arith

    # The lowest set bit (x & -x, a power of two or 0); its index has bit k
    # set where it lies in the mask of positions with bit k set (0xAAAA...,
    # 0xCCCC..., 0xF0F0..., ...). Plain integer operations on every target.
    bits = s.dtype.bits
    lowest = arith.AndIOp(s.value, arith.SubIOp(constant(0, s.dtype), s.value).result).result
    index = constant(1, s.dtype)  # one-based
    for k in range(bits.bit_length() - 1):
        mask = sum(1 << i for i in range(bits) if i >> k & 1)
        if s.dtype.kind == "int" and mask >= 1 << (bits - 1):
            mask -= 1 << bits
        hit = arith.CmpIOp(arith.CmpIPredicate.ne,
                           arith.AndIOp(lowest, constant(mask, s.dtype)).result,
                           constant(0, s.dtype)).result
        index = arith.SelectOp(hit, arith.AddIOp(index, constant(1 << k, s.dtype)).result,
                               index).result
    is_zero = arith.CmpIOp(arith.CmpIPredicate.eq, s.value, constant(0, s.dtype)).result
    found = arith.SelectOp(is_zero, constant(0, s.dtype), index).result
    return to_scalar(Scalar(found, s.dtype), dt.int32)


def _fns_reference(mask: int, base: int, offset: int) -> int:
    """PTX `fns.b32` on Python ints (the constant-folded T.__fns)."""
    mask &= 0xFFFFFFFF
    if offset == 0:
        return base if 0 <= base < 32 and mask >> base & 1 else 0xFFFFFFFF
    step, count, pos = (1 if offset > 0 else -1), builtins.abs(offset), base
    while 0 <= pos < 32:
        if mask >> pos & 1:
            count -= 1
            if count == 0:
                return pos
        pos += step
    return 0xFFFFFFFF


def __fns(mask, base, offset):
    """CUDA's `__fns(mask, base, offset)` (PTX `fns.b32`): the position of
    the |offset|-th set bit of the 32-bit `mask` counting from bit `base`
    (inclusive) toward the most significant bit for a positive offset, toward
    the least significant for a negative one; for offset 0, `base` itself if
    that bit is set. 0xFFFFFFFF (uint32) where there is no such bit."""
    mask, base, offset = (_unwrap_ref(v) for v in (mask, base, offset))
    mask, base, offset = (v.load() if isinstance(v, BufferRef) else v
                          for v in (mask, base, offset))
    if not any(is_runtime(v) for v in (mask, base, offset)):
        for name, v in (("mask", mask), ("base", base), ("offset", offset)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise _error(f"T.__fns: {name} must be an integer, got {v!r}")
        return _fns_reference(mask, base, offset)
    from ..dialects import arith, math as mmath

    def as32(v, dtype, what):
        s = to_scalar(v, dtype) if not is_runtime(v) else to_scalar(v)
        if s.dtype.kind not in ("int", "uint"):
            raise _error(f"T.__fns: {what} must be an integer, got {s.dtype}")
        return to_scalar(s, dtype).value

    m = as32(mask, dt.uint32, "mask")
    b = as32(base, dt.int32, "base")
    o = as32(offset, dt.int32, "offset")
    c = lambda v: constant(v, dt.int32)  # noqa: E731
    cmp = arith.CmpIOp
    P = arith.CmpIPredicate
    zero, one = c(0), c(1)
    forward = cmp(P.sgt, o, zero).result
    backward = cmp(P.slt, o, zero).result
    at_base = cmp(P.eq, o, zero).result
    count = arith.SelectOp(backward, arith.SubIOp(zero, o).result, o).result
    # Bits at and above base (forward) or at and below base (backward).
    base_ok = arith.AndIOp(cmp(P.sge, b, zero).result, cmp(P.slt, b, c(32)).result).result
    b_clamped = arith.SelectOp(base_ok, b, zero).result
    from_base = arith.ShLIOp(c(-1), b_clamped).result  # bits >= base
    upto_base = arith.XOrIOp(arith.ShLIOp(c(-2), b_clamped).result, c(-1)).result  # <= base
    result = c(-1)
    for pos in range(32):
        bit = arith.AndIOp(arith.ShRUIOp(m, c(pos)).result, one).result
        is_set = cmp(P.ne, bit, zero).result
        upto = c(-1) if pos == 31 else c((2 << pos) - 1)  # bits <= pos
        from_pos = c(-1 << pos)  # bits >= pos
        ahead = mmath.CtPopOp(arith.AndIOp(m, arith.AndIOp(from_base, upto).result).result).result
        behind = mmath.CtPopOp(
            arith.AndIOp(m, arith.AndIOp(upto_base, from_pos).result).result).result
        hit_fwd = arith.AndIOp(arith.AndIOp(forward, cmp(P.sge, c(pos), b).result).result,
                               cmp(P.eq, ahead, count).result).result
        hit_bwd = arith.AndIOp(arith.AndIOp(backward, cmp(P.sle, c(pos), b).result).result,
                               cmp(P.eq, behind, count).result).result
        hit_base = arith.AndIOp(at_base, cmp(P.eq, c(pos), b).result).result
        hit = arith.AndIOp(arith.AndIOp(is_set, base_ok).result,
                           arith.OrIOp(arith.OrIOp(hit_fwd, hit_bwd).result, hit_base).result
                           ).result
        result = arith.SelectOp(hit, c(pos), result).result
    return to_scalar(Scalar(result, dt.int32), dt.uint32)


__all__ = ["__ldg", "__ffs", "__fns"]


# -- bits of values ------------------------------------------------------------


def _lanes_of(x) -> list:
    from .values import Vector, _vector_ref

    x = _vector_ref(_unwrap_ref(x))
    if isinstance(x, Vector):
        return [to_scalar(v) for v in x.lanes]
    return [to_scalar(x)]


def regroup_bits(x, element: dt.DType, what: str) -> list:
    """The bits of the scalar or vector `x` (lane 0 lowest, as in memory)
    read as values of the scalar dtype `element`: a list of Scalars."""
    from ..dialects import arith
    from .values import ir_type

    lanes = _lanes_of(x)
    sb, tb = lanes[0].dtype.bits, element.bits
    if any(v.dtype.bits != sb or v.dtype.is_bool or v.dtype.pack > 1 for v in lanes) or \
            sb not in (8, 16, 32, 64) or tb not in (8, 16, 32, 64) or element.is_bool:
        raise _error(f"{what}: lanes of 8, 16, 32 or 64 bits are needed, got "
                     f"{lanes[0].dtype} and {element}")
    total = sb * len(lanes)
    if total % tb:
        raise _error(f"{what}: {total} bits do not make whole {element} values")

    def as_uint(v, bits):
        u = dt.as_dtype(f"uint{bits}")
        return v.value if v.dtype.is_int else arith.BitcastOp(ir_type(u), v.value).result

    words = [as_uint(v, sb) for v in lanes]
    ut = ir_type(dt.as_dtype(f"uint{tb}"))
    out = []
    if tb == sb:
        out = words
    elif tb < sb:
        for w in words:
            for k in range(sb // tb):
                part = arith.ShRUIOp(w, constant(k * tb, dt.as_dtype(f"uint{sb}"))).result \
                    if k else w
                out.append(arith.TruncIOp(ut, part).result)
    else:
        r = tb // sb
        for g in range(0, len(words), r):
            acc = None
            for k in range(r):
                part = arith.ExtUIOp(ut, words[g + k]).result
                if k:
                    part = arith.ShLIOp(part, constant(k * sb, dt.as_dtype(f"uint{tb}"))).result
                acc = part if acc is None else arith.OrIOp(acc, part).result
            out.append(acc)
    if element.is_int:
        return [Scalar(w, element) for w in out]
    return [Scalar(arith.BitcastOp(ir_type(element), w).result, element) for w in out]


def _as_value(scalars: list):
    from .values import Vector

    return scalars[0] if len(scalars) == 1 else Vector(scalars)


# -- explicit loads and stores of 32 to 256 bits ---------------------------------


def _access(ref, bits: int, what: str) -> list:
    """The element positions (BufferRefs) `bits` bits starting at the
    position or region `ref` cover."""
    from .values import IndexExpr

    if isinstance(ref, Buffer):
        ref = BufferRef(ref, (0,) * ref.ndim)
    if not isinstance(ref, BufferRef):
        raise _error(f"{what} expects a buffer, a position x[i] or a region x[i:j], got "
                     f"{ref!r}")
    b = ref.buffer
    if b.dtype.bits * b.dtype.lanes not in (8, 16, 32, 64) or b.dtype.pack > 1:
        raise _error(f"{what}: elements of 8 to 64 bits, got {b.dtype} ({b.name!r})")
    esize = b.dtype.bits
    if bits % esize:
        raise _error(f"{what} moves {bits} bits: not a whole number of {b.dtype} elements")
    count = bits // esize
    items = list(ref.items)
    if len(items) != b.ndim:
        raise _error(f"{what}: buffer {b.name!r} of rank {b.ndim} with {len(items)} indices")
    last = items[-1]
    if isinstance(last, slice):
        start, extent = ref._slice(len(items) - 1, last)
        if extent != count:
            raise _error(f"{what} moves {bits} bits = {count} {b.dtype} elements, but the "
                         f"region of {b.name!r} has {extent}")
        last = start
    for i, item in enumerate(items[:-1]):
        if isinstance(item, slice):
            raise _error(f"{what}: only the last dimension of {b.name!r} may be a region")
    return [BufferRef(b, tuple(items[:-1]) + (binary_add(last, k),)) for k in range(count)]


def binary_add(x, k: int):
    from .values import binary

    return x if k == 0 else binary("+", x, k)


def _load_bits(src, bits: int, pred, what: str):
    from .math import if_then_else

    refs = _access(src, bits, what)
    elements = [r.load() for r in refs]
    words = regroup_bits(_as_value(elements), dt.uint32, what)
    if pred is not None:
        zero = Scalar(constant(0, dt.uint32), dt.uint32)
        words = [to_scalar(if_then_else(pred, w, zero), dt.uint32) for w in words]
    return _as_value(words)


def _store_bits(dst, value, bits: int, pred, what: str):
    refs = _access(dst, bits, what)
    have = sum(v.dtype.bits for v in _lanes_of(value))
    if have != bits:
        raise _error(f"{what} stores {bits} bits, got a value of {have}")
    parts = regroup_bits(value, refs[0].buffer.dtype, what)
    if pred is None:
        for r, v in zip(refs, parts):
            r.store(v)
        return
    from ..dialects import scf

    from .values import _ir

    if_op = scf.IfOp(to_scalar(pred, dt.boolean).value, [], has_else=False)
    with _ir().InsertionPoint(if_op.then_block):
        for r, v in zip(refs, parts):
            r.store(v)
        scf.YieldOp([])


def _loader(bits: int, name: str, predicated: bool):
    if predicated:
        def fn(src, pred=None):
            return _load_bits(src, bits, pred, f"T.{name}")
    else:
        def fn(src):
            return _load_bits(src, bits, None, f"T.{name}")
    words = bits // 32
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"The {bits} bits at the position or region `src` "
                  f"({'global' if predicated else 'shared'} memory) as "
                  f"{'a uint32' if words == 1 else f'uint32x{words}'} value (lane 0 the "
                  "lowest address)" + ("; with `pred` false, zeros and no read." if predicated
                                       else "."))
    return fn


def _storer(bits: int, name: str, predicated: bool):
    if predicated:
        def fn(dst, value, pred=None):
            _store_bits(dst, value, bits, pred, f"T.{name}")
    else:
        def fn(dst, value):
            _store_bits(dst, value, bits, None, f"T.{name}")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Stores the {bits} bits of `value` (a scalar or vector of that width) at "
                  f"the position or region `dst` ({'global' if predicated else 'shared'} "
                  "memory, lane 0 at the lowest address)"
                  + ("; nothing with `pred` false." if predicated else "."))
    return fn


ldg32, ldg64, ldg128, ldg256 = (_loader(n, f"ldg{n}", True) for n in (32, 64, 128, 256))
lds32, lds64, lds128 = (_loader(n, f"lds{n}", False) for n in (32, 64, 128))
stg32, stg64, stg128, stg256 = (_storer(n, f"stg{n}", True) for n in (32, 64, 128, 256))
sts32, sts64, sts128 = (_storer(n, f"sts{n}", False) for n in (32, 64, 128))

__all__ += ["ldg32", "ldg64", "ldg128", "ldg256", "lds32", "lds64", "lds128", "stg32", "stg64",
            "stg128", "stg256", "sts32", "sts64", "sts128"]
