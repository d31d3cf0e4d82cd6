"""Data movement: copy, fill, clear, atomic add."""

from __future__ import annotations

from ._builtin import builtin


@builtin
def copy(b, src, dst, coalesced_width=None, disable_tma: bool = False, eviction_policy=None,
         prefer_instruction=None, annotations=None, loop_layout=None):
    """Copies a region between any two scopes; out-of-range reads give zero
    and out-of-range writes are dropped. `A[i, j]` names the start of a region
    whose extent is the other side's shape; slices give explicit extents.
    TileLang's hints on how to issue it (coalesced_width, disable_tma,
    eviction_policy, prefer_instruction, loop_layout) leave the result as it
    is; the compiler chooses the instructions itself."""
    b.copy(src, dst)


@builtin
def fill(b, buffer, value, annotations=None):
    """Sets every element of `buffer` (a buffer, a region `X[0:4, :]` or one
    element `X[i, j]`) to `value`; `annotations` are TileLang's lowering
    hints, accepted."""
    b.fill(buffer, value, "T.fill")


@builtin
def clear(b, buffer, annotations=None):
    """Sets every element of `buffer` (a buffer or a region) to zero."""
    b.fill(buffer, 0, "T.clear")


@builtin
def atomic_add(b, dst, value, memory_order=None, return_prev: bool = False,
               use_tma: bool = False, annotations=None):
    """Atomically adds a scalar into `dst[i, ...]`, or a tile into the region
    of `dst` starting there. Inside `T.Parallel`, `T.atomic_add(C[i, j],
    frag[i, j])` adds each element once. The atomics are relaxed
    (`memory_order` None or "relaxed"). `use_tma`: a shared tile added into
    a global tensor as one bulk reduction by the TMA unit
    (`cp.reduce.async.bulk.tensor`, sm_90 and newer), the block's threads
    synchronized before and after it; elsewhere (no TMA, a fragment value,
    a tile TMA cannot take) the same adds element by element."""
    if return_prev:
        raise b.error("not supported by tilelang-mlir: T.atomic_add(..., return_prev=True) "
                      "(the atomic returns no value here)")
    if memory_order not in (None, "relaxed"):
        raise b.error(f"not supported by tilelang-mlir: T.atomic_add with memory_order="
                      f"{memory_order!r} (its atomics are relaxed)")
    b.atomic_add(dst, value, tma=use_tma)


@builtin
def im2col(b, img, col, nhw_step, c_step, kernel: int, stride: int, dilation: int, pad: int,
           eviction_policy=None, annotations=None):
    """Loads the (nhw_step, c_step) tile of the im2col matrix of NHWC image
    `img` for a square `kernel` into `col` (rows: output pixels n, oh, ow;
    columns: taps kh, kw, c); taps in the padding give zero. A 2-D
    convolution is then a T.gemm of `col` with the (KH*KW*C, F) filter."""
    b.im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad)
