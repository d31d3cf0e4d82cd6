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
    eviction_policy, prefer_instruction) leave the result as it is; the
    compiler chooses the instructions itself (an eviction_policy must still
    be one of TileLang's). `loop_layout` (a T.Fragment over the copy's loop:
    the sliced dimensions of the more local side's region) makes it
    TileLang's element-wise copy with each element moved by the thread the
    layout names."""
    _check_eviction_policy(b, eviction_policy)
    b.copy(src, dst, loop_layout=loop_layout)


_EVICTION_POLICIES = (None, "evict_normal", "evict_first", "evict_last")


def _check_eviction_policy(b, eviction_policy) -> None:
    if eviction_policy not in _EVICTION_POLICIES:
        raise b.error(f"eviction_policy must be one of {_EVICTION_POLICIES[1:]}, got "
                      f"{eviction_policy!r}")


# TileLang's annotation keys of T.copy_cluster, each with its argument.
_CLUSTER_KEYS = {"dst_block": "dst_block", "cluster_mask": "cluster_mask",
                 "barrier": "remote_barrier", "eviction_policy": "eviction_policy",
                 "coalesced_width": "coalesced_width", "parallel_loop_layout": "loop_layout"}
_EVICTION_CODES = {0: "evict_normal", 1: "evict_first", 2: "evict_last"}


@builtin
def copy_cluster(b, src, dst, *, dst_block=None, cluster_mask=None, remote_barrier=None,
                 eviction_policy=None, coalesced_width=None, annotations=None,
                 loop_layout=None):
    """A copy between the blocks of a thread block cluster (a kernel with
    cluster_dims; NVIDIA sm_90 and newer), in two forms:

    - `T.copy_cluster(src, dst, dst_block=R)`: the shared region `src` of
      this block into the region `dst` (same shape and element type) of
      the shared memory of block R of the cluster. With
      `remote_barrier=bar[i]`, the copy completes on block R's `bar[i]`
      (one arrival there; block R waits with T.mbarrier_wait_parity): runs
      of whole 16-byte multiples go as bulk copies (cp.async.bulk), other
      regions element by element, released to block R at cluster scope.
      Without it, the program orders the copy before block R's reads
      (T.cluster_sync). A bulk copy reads `src` asynchronously: do not
      overwrite it before block R has the data.
    - `T.copy_cluster(A[...], A_shared, cluster_mask=M)`: a TMA load of the
      global region into the whole shared buffer; bit r of M names block
      rank r. The lowest rank of M loads its own region into every block
      of M (multicast), the other blocks of M receive it, and the blocks
      outside M load their own region. Synchronous like T.copy: after it
      every thread of the block sees the data. In a loop, the program
      orders another block's next multicast after this block's reads
      (T.cluster_sync).

    With neither it is T.copy. `eviction_policy` (the multicast's L2
    priority), `coalesced_width` and `loop_layout` (hints for the
    element-wise copy, which leave the result as it is) and `annotations`
    (TileLang's keys, which take precedence over the arguments) are
    TileLang's; a combination that means nothing (an eviction policy of a
    copy between shared buffers, a loop layout or barrier of a multicast)
    is refused."""
    args = {"dst_block": dst_block, "cluster_mask": cluster_mask,
            "remote_barrier": remote_barrier, "eviction_policy": eviction_policy,
            "coalesced_width": coalesced_width, "loop_layout": loop_layout}
    if annotations is not None:
        if not isinstance(annotations, dict):
            raise b.error(f"T.copy_cluster: annotations must be a dict, got {annotations!r}")
        for key, value in annotations.items():
            if key not in _CLUSTER_KEYS:
                raise b.error(f"T.copy_cluster: unknown annotation {key!r} (TileLang's keys: "
                              f"{', '.join(sorted(_CLUSTER_KEYS))})")
            if key == "eviction_policy" and isinstance(value, int) and \
                    not isinstance(value, bool):
                if value not in _EVICTION_CODES:
                    raise b.error(f"T.copy_cluster: annotation eviction_policy {value} is not "
                                  "one of TileLang's codes 0, 1, 2")
                value = _EVICTION_CODES[value]
            args[_CLUSTER_KEYS[key]] = value
    _check_eviction_policy(b, args["eviction_policy"])
    b.copy_cluster(src, dst, dst_block=args["dst_block"], cluster_mask=args["cluster_mask"],
                   barrier=args["remote_barrier"], eviction=args["eviction_policy"],
                   coalesced_width=args["coalesced_width"], loop_layout=args["loop_layout"])


@builtin
def async_copy(b, src, dst, coalesced_width=None, annotations=None, loop_layout=None):
    """T.async_copy(src, dst): an asynchronous copy from a global tensor into
    a shared buffer (cp.async, then a commit of the thread's group, as
    TileLang); no wait is inserted: the copied data is ready after
    T.ptx_wait_group(n) (and a T.sync_threads for other threads' copies).
    On targets without asynchronous copies (the CPU) it is synchronous.
    With `loop_layout` (a T.Fragment over the copy's loop, as T.copy's),
    each element is copied by the thread the layout names, so a thread may
    read what it copied after its own wait, without a barrier; that form is
    issued as ordinary loads and stores, complete at once for the thread."""
    b.copy(src, dst, what="T.async_copy", async_=True, loop_layout=loop_layout)
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
