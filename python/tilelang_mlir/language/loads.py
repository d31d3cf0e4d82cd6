"""Element loads with CUDA's names: `T.__ldg(x[i])` (a load through the
read-only data cache on CUDA) and bit-position helpers of warp masks
(`T.__ffs`)."""

from __future__ import annotations

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


__all__ = ["__ldg", "__ffs"]
