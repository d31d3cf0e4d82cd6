"""Atomic operations, with TileLang's names and meanings.

An element form (`T.atomic_max(C[i], v)`) updates one element; outside
`T.Parallel` every thread of the block makes the update, as TileLang's
scalar atomics are (a thread-uniform `T.atomic_add(C[0], 1)` in a block of
128 threads adds 128), inside it each element of the loop once. A tile form
(`T.atomic_add(C[0:64, 0:64], frag)`) updates a region element by element.
`memory_order` takes C++'s names (relaxed when omitted) at device scope;
`return_prev=True` returns the element as it was before (element forms).

On the CPU target (one thread of control per block) an update outside
`T.Parallel` is repeated once per thread of the block where that changes
memory (add); a previous value there would differ per thread and is
refused.
"""

from __future__ import annotations

from ._builtin import builtin
from .values import Buffer, BufferRef

_ORDERS = ("relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst")
# A load only acquires, a store only releases (C++'s rule for atomic loads
# and stores).
LOAD_ORDERS = ("relaxed", "consume", "acquire", "seq_cst")
STORE_ORDERS = ("relaxed", "release", "seq_cst")


def _is_tile(x) -> bool:
    """A tile operand: a buffer of rank >= 1 or a sliced region."""
    if isinstance(x, Buffer):
        return x.ndim > 0
    if isinstance(x, BufferRef):
        return any(isinstance(i, slice) for i in x.items)
    return False


def _check_order(b, order, what: str, allowed=_ORDERS) -> None:
    """A memory order `what` cannot take is a ValueError when the program is
    defined (as in TileLang)."""
    if order is not None and order not in allowed:
        kinds = "an atomic load" if allowed is LOAD_ORDERS else \
            "an atomic store" if allowed is STORE_ORDERS else "an atomic update"
        raise b.error(f"{what} does not support memory_order={order!r}: "
                      f"{kinds} takes one of {list(allowed)}", kind=ValueError,
                      at_definition=True)


def _update(b, kind: str, dst, value, memory_order, return_prev: bool, what: str):
    _check_order(b, memory_order, what)
    dst = b.element_of(dst)
    if not (_is_tile(dst) or _is_tile(value)):
        return b.atomic_element(kind, dst, value, memory_order, return_prev, what)
    if return_prev:
        raise b.error(f"{what}(..., return_prev=True) returns one element's previous value; "
                      "a tile update has none (TileLang's rule)")
    b.atomic_region(kind, dst, value, memory_order, what)
    return None


@builtin
def atomic_add(b, dst, value, memory_order=None, return_prev: bool = False,
               use_tma: bool = False, annotations=None):
    """Atomically adds `value` into the element `dst[i, ...]`, or a tile (or
    region) into the region of `dst` it names. `return_prev=True` returns
    the element's previous value (element form). `use_tma`: a shared tile
    added into a global tensor as one bulk reduction by the TMA unit
    (`cp.reduce.async.bulk.tensor`, sm_90 and newer), the block's threads
    synchronized before and after it; elsewhere the same adds element by
    element. See the module docstring for who makes the update."""
    what = "T.atomic_add"
    _check_order(b, memory_order, what)
    dst = b.element_of(dst)
    region_value = isinstance(value, BufferRef) and _is_tile(value)
    if memory_order in (None, "relaxed") and not return_prev and not region_value:
        b.atomic_add(dst, value, tma=use_tma)
        return None
    return _update(b, "add", dst, value, memory_order, return_prev, what)


@builtin
def atomic_max(b, dst, value, memory_order=None, return_prev: bool = False, annotations=None):
    """Atomically replaces the element `dst[i, ...]` by `value` when `value`
    is greater (a NaN never is, and a NaN element stays: C++'s
    atomic fetch_max); a tile form does it element by element."""
    return _update(b, "max", dst, value, memory_order, return_prev, "T.atomic_max")


@builtin
def atomic_min(b, dst, value, memory_order=None, return_prev: bool = False, annotations=None):
    """Atomically replaces the element `dst[i, ...]` by `value` when `value`
    is smaller (a NaN never is); a tile form does it element by element."""
    return _update(b, "min", dst, value, memory_order, return_prev, "T.atomic_min")


@builtin
def atomic_or(b, dst, value, memory_order=None):
    """Atomically ors the integer `value` into the element `dst[i, ...]`
    (element form only, as in TileLang)."""
    dst = b.element_of(dst)
    if _is_tile(dst) or _is_tile(value):
        raise b.error("T.atomic_or updates one element (`dst[i]`), not a region")
    _check_order(b, memory_order, "T.atomic_or")
    b.atomic_element("bitor", dst, value, memory_order, False, "T.atomic_or")


def _vector_add(lanes: int):
    name = f"atomic_addx{lanes}"

    @builtin
    def fn(b, dst, value, return_prev: bool = False):
        return b.atomic_vector_add(b.element_of(dst), value, lanes, f"T.{name}",
                                   return_prev=return_prev)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Atomically adds the {lanes} consecutive elements of `value` that start "
                  f"at `value[i, j]` into the {lanes} that start at `dst[...]` along the "
                  f"last dimension (TileLang's AtomicAddx{lanes}; each element atomically, "
                  "converted to the destination's dtype); `return_prev=True` returns the "
                  f"{lanes} previous values as a vector.")
    return fn


atomic_addx2 = _vector_add(2)
atomic_addx4 = _vector_add(4)


@builtin
def atomic_load(b, src, memory_order: str = "seq_cst"):
    """The element `src[i, ...]` (a whole buffer: its first element), read
    atomically with `memory_order` (relaxed, consume, acquire or seq_cst)."""
    _check_order(b, memory_order, "T.atomic_load", LOAD_ORDERS)
    return b.atomic_load(b.element_of(src), memory_order)


@builtin
def atomic_store(b, dst, src, memory_order: str = "seq_cst"):
    """Stores `src` into the element `dst[i, ...]` atomically with
    `memory_order` (relaxed, release or seq_cst)."""
    _check_order(b, memory_order, "T.atomic_store", STORE_ORDERS)
    b.atomic_store(b.element_of(dst), src, memory_order)


__all__ = ["atomic_add", "atomic_max", "atomic_min", "atomic_or", "atomic_addx2",
           "atomic_addx4", "atomic_load", "atomic_store"]
