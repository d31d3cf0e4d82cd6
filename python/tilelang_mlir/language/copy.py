"""Data movement: copy, fill, clear, im2col (atomics: atomic.py)."""

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
def fill(b, buffer, value):
    """Sets every element of `buffer` to `value`."""
    b.fill(buffer, value)


@builtin
def clear(b, buffer):
    """Sets every element of `buffer` to zero."""
    b.fill(buffer, 0)


@builtin
def im2col(b, img, col, nhw_step, c_step, kernel: int, stride: int, dilation: int, pad: int,
           eviction_policy=None, annotations=None):
    """Loads the (nhw_step, c_step) tile of the im2col matrix of NHWC image
    `img` for a square `kernel` into `col` (rows: output pixels n, oh, ow;
    columns: taps kh, kw, c); taps in the padding give zero. A 2-D
    convolution is then a T.gemm of `col` with the (KH*KW*C, F) filter."""
    b.im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad)
