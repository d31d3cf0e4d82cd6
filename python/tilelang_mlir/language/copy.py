"""Data movement: copy, fill, clear, atomic add."""

from __future__ import annotations

from ._builtin import builtin


@builtin
def copy(b, src, dst, coalesced_width=None, disable_tma: bool = False):
    """Copies a region between any two scopes; out-of-range reads give zero
    and out-of-range writes are dropped. `A[i, j]` names the start of a region
    whose extent is the other side's shape; slices give explicit extents."""
    b.copy(src, dst)


@builtin
def fill(b, buffer, value):
    """Sets every element of `buffer` to `value`."""
    b.fill(buffer, value)


@builtin
def clear(b, buffer):
    """Sets every element of `buffer` to zero."""
    b.fill(buffer, 0)


@builtin
def atomic_add(b, dst, value, memory_order=None, return_prev: bool = False,
               use_tma: bool = False):
    """Atomically adds a scalar into `dst[i, ...]`, or a tile into the region
    of `dst` starting there. Inside `T.Parallel`, `T.atomic_add(C[i, j],
    frag[i, j])` adds each element once. The atomics are relaxed
    (`memory_order` None or "relaxed"). `use_tma` (TileLang: a tile add as
    one bulk TMA reduction) is a performance hint: the same adds are made,
    element by element."""
    if return_prev:
        raise b.error("T.atomic_add(..., return_prev=True) is not supported by tilelang-mlir: "
                      "the atomic returns no value here")
    if memory_order not in (None, "relaxed"):
        raise b.error(f"T.atomic_add memory_order={memory_order!r} is not supported by "
                      "tilelang-mlir: its atomics are relaxed")
    b.atomic_add(dst, value)
