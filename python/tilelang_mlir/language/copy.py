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
    is; the compiler chooses the instructions itself (an eviction_policy
    must still be one of TileLang's)."""
    _check_eviction_policy(b, eviction_policy)
    b.copy(src, dst)


_EVICTION_POLICIES = (None, "evict_normal", "evict_first", "evict_last")


def _check_eviction_policy(b, eviction_policy) -> None:
    if eviction_policy not in _EVICTION_POLICIES:
        raise b.error(f"eviction_policy must be one of {_EVICTION_POLICIES[1:]}, got "
                      f"{eviction_policy!r}")


@builtin
def async_copy(b, src, dst, coalesced_width=None, annotations=None, loop_layout=None):
    """T.async_copy(src, dst): an asynchronous copy from a global tensor into
    a shared buffer (cp.async, then a commit of the thread's group, as
    TileLang); no wait is inserted: the copied data is ready after
    T.ptx_wait_group(n) (and a T.sync_threads for other threads' copies).
    On targets without asynchronous copies (the CPU) it is synchronous."""
    b.copy(src, dst, what="T.async_copy", async_=True)
    b.async_commit()


@builtin
def transpose(b, src, dst, annotations=None):
    """T.transpose(src, dst): dst[..., j, i] = src[..., i, j] for buffers or
    regions of shapes (..., M, N) and (..., N, M) (TileLang's shared-memory
    transpose; any scopes here)."""
    b.transpose(src, dst)


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
def im2col(b, img, col, nhw_step, c_step, kernel: int, stride: int, dilation: int, pad: int,
           eviction_policy=None, annotations=None):
    """Loads the (nhw_step, c_step) tile of the im2col matrix of NHWC image
    `img` for a square `kernel` into `col` (rows: output pixels n, oh, ow;
    columns: taps kh, kw, c); taps in the padding give zero. A 2-D
    convolution is then a T.gemm of `col` with the (KH*KW*C, F) filter."""
    _check_eviction_policy(b, eviction_policy)
    b.im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad)


@builtin
def c2d_im2col(b, img, col, nhw_step, c_step, kernel: int, stride: int, dilation: int,
               pad: int, eviction_policy=None, annotations=None):
    """Deprecated alias of T.im2col (TileLang's older name)."""
    _check_eviction_policy(b, eviction_policy)
    b.im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad)
