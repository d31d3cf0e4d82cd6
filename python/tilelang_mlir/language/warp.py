"""Lanes, warps and the SIMT style of TileLang programs.

Scalar code outside `T.Parallel` runs in every thread of the block; these
names give each thread its lane and warp and let the lanes of a warp
exchange values, vote and reduce, as CUDA's intrinsics do:

    tx = T.get_thread_binding()
    v = A[tx]
    v = T.warp_reduce_sum(v)          # every lane: the warp's sum
    B[tx] = T.shfl_xor(v, 1)          # each thread stores its own element

They need a GPU target (the CPU backend runs a block as one thread of
control, without warps, and refuses them); T.sync_warp and the block votes
(T.syncthreads_count, _and, _or) also run there.
"""

from __future__ import annotations

from ._builtin import builtin
from .values import IndexExpr, Scalar, to_index, to_scalar

_FULL_MASK = 0xFFFFFFFF
_WIDTH = 32


def _int32(x: IndexExpr) -> Scalar:
    return to_scalar(x.to_scalar(), "int32")


# -- lanes and warps ---------------------------------------------------------


@builtin
def get_lane_idx(b, warp_size=None):
    """The lane of the executing thread in its warp: its linear index in
    the block modulo `warp_size` (default: the target's, 32 on NVIDIA, 64
    on AMD). int32."""
    tid = b.linear_thread_index("T.get_lane_idx")
    return _int32(tid.mod(b.warp_size(warp_size, "T.get_lane_idx")))


@builtin
def get_warp_idx(b, warp_size=None):
    """The warp of the executing thread: its linear index in the block
    divided by `warp_size` (default: the target's). int32."""
    tid = b.linear_thread_index("T.get_warp_idx")
    return _int32(tid.floordiv(b.warp_size(warp_size, "T.get_warp_idx")))


@builtin
def get_warp_idx_sync(b, warp_size=None):
    """T.get_warp_idx (the same index; TileLang's variant for converged
    warps)."""
    tid = b.linear_thread_index("T.get_warp_idx_sync")
    return _int32(tid.floordiv(b.warp_size(warp_size, "T.get_warp_idx_sync")))


@builtin
def get_warp_group_idx(b, warp_size=None, warps_per_group=None):
    """The warpgroup of the executing thread: its linear index divided by
    `warp_size * warps_per_group` (defaults: the target's warp size, 4
    warps). int32."""
    if warps_per_group is not None and warp_size is None:
        raise b.error("T.get_warp_group_idx expects `warp_size` when `warps_per_group` is "
                      "given")
    tid = b.linear_thread_index("T.get_warp_group_idx")
    ws = b.warp_size(warp_size, "T.get_warp_group_idx")
    group = to_index(4 if warps_per_group is None else warps_per_group,
                     "T.get_warp_group_idx warps_per_group")
    if group.is_const() and group.const <= 0:
        raise b.error(f"T.get_warp_group_idx: warps_per_group must be positive, got "
                      f"{group.const}")
    return _int32(tid.floordiv(ws.mul(group)))


@builtin
def shuffle_elect(b, thread_extent):
    """True in one lane of each group of `thread_extent` threads (of the
    warps whose index is a multiple of ceil(thread_extent / 32)); with 0,
    in one lane of the block's first warp. bool."""
    return b.elect(thread_extent)


# -- shuffles ----------------------------------------------------------------


@builtin
def shfl_sync(b, value, srcLane, width=_WIDTH, mask=_FULL_MASK):
    """`value` from lane `srcLane` of the executing thread's segment of
    `width` lanes (CUDA's __shfl_sync); the lanes of `mask` take part."""
    return b.shuffle("idx", value, srcLane, width, mask, "T.shfl_sync")


@builtin
def shfl_xor(b, value, delta, width=_WIDTH, mask=_FULL_MASK):
    """`value` from lane `lane ^ delta` (CUDA's __shfl_xor_sync; a lane in a
    later segment of `width` lanes keeps its own value)."""
    return b.shuffle("Xor", value, delta, width, mask, "T.shfl_xor")


@builtin
def shfl_down(b, value, delta, width=_WIDTH, mask=_FULL_MASK):
    """`value` from lane `lane + delta` (CUDA's __shfl_down_sync; past the
    end of the segment of `width` lanes, the lane keeps its own value)."""
    return b.shuffle("down", value, delta, width, mask, "T.shfl_down")


@builtin
def shfl_up(b, value, delta, width=_WIDTH, mask=_FULL_MASK):
    """`value` from lane `lane - delta` (CUDA's __shfl_up_sync; before the
    start of the segment of `width` lanes, the lane keeps its own value)."""
    return b.shuffle("up", value, delta, width, mask, "T.shfl_up")


# -- votes -------------------------------------------------------------------


@builtin
def any_sync(b, predicate, mask=_FULL_MASK):
    """1 when `predicate` (an integer or bool) is non-zero in some lane of
    `mask`, else 0 (CUDA's __any_sync). int32."""
    return b.warp_vote("any", predicate, mask, "T.any_sync")


@builtin
def all_sync(b, predicate, mask=_FULL_MASK):
    """1 when `predicate` is non-zero in every lane of `mask` that runs it,
    else 0 (CUDA's __all_sync). int32."""
    return b.warp_vote("all", predicate, mask, "T.all_sync")


@builtin
def ballot_sync(b, predicate, mask=_FULL_MASK):
    """The lanes of `mask` whose `predicate` is non-zero, bit l for lane l
    (CUDA's __ballot_sync, zero-extended; an AMD wave's 64 lanes). uint64."""
    return b.warp_vote("ballot", predicate, mask, "T.ballot_sync")


@builtin
def ballot(b, predicate):
    """T.ballot_sync over the whole warp. uint64."""
    return b.warp_vote("ballot", predicate, _FULL_MASK, "T.ballot")


@builtin
def activemask(b):
    """The lanes of the warp executing this call, bit l for lane l (CUDA's
    __activemask, zero-extended). uint64."""
    return b.active_mask()


@builtin
def match_any_sync(b, value, mask=_FULL_MASK):
    """The lanes of `mask` whose `value` (32 or 64 bits) equals this lane's
    (CUDA's __match_any_sync; NVIDIA only). uint32."""
    return b.warp_match("any", value, mask, "T.match_any_sync")


@builtin
def match_all_sync(b, value, mask=_FULL_MASK):
    """`mask` when all lanes of `mask` hold the same `value`, else 0 (CUDA's
    __match_all_sync; NVIDIA only). uint32."""
    return b.warp_match("all", value, mask, "T.match_all_sync")


@builtin
def syncthreads_count(b, predicate):
    """A barrier of the block that returns how many threads have a non-zero
    `predicate` (CUDA's __syncthreads_count). int32."""
    return b.block_vote("count", predicate, "T.syncthreads_count")


@builtin
def syncthreads_and(b, predicate):
    """A barrier of the block that returns 1 when every thread's
    `predicate` is non-zero, else 0 (CUDA's __syncthreads_and). int32."""
    return b.block_vote("and", predicate, "T.syncthreads_and")


@builtin
def syncthreads_or(b, predicate):
    """A barrier of the block that returns 1 when some thread's `predicate`
    is non-zero, else 0 (CUDA's __syncthreads_or). int32."""
    return b.block_vote("or", predicate, "T.syncthreads_or")


@builtin
def sync_warp(b, mask=None):
    """The lanes of `mask` (default: all) wait for each other; their
    memory accesses before it are visible after it (CUDA's __syncwarp)."""
    b.sync_warp(mask)


@builtin
def thread_return(b):
    """The executing thread exits the kernel here (CUDA's `return`; the
    block's barriers stop waiting for it). GPU targets."""
    b.thread_return()


# -- warp reductions ---------------------------------------------------------


def _warp_reduce(kind: str, doc: str):
    name = f"warp_reduce_{kind}"

    @builtin
    def fn(b, value):
        return b.warp_reduce(kind, value, f"T.{name}")

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


warp_reduce_sum = _warp_reduce(
    "sum", "The sum of `value` over the lanes of the warp, in every lane (all lanes take "
    "part; TileLang's xor-shuffle order, so that float sums agree in every lane).")
warp_reduce_max = _warp_reduce(
    "max", "The largest `value` of the lanes of the warp, in every lane (a NaN of one lane "
    "is ignored, as fmaxf does).")
warp_reduce_min = _warp_reduce(
    "min", "The smallest `value` of the lanes of the warp, in every lane (a NaN of one lane "
    "is ignored, as fminf does).")
warp_reduce_bitand = _warp_reduce(
    "bitand", "The bitwise and of the integer `value` of the lanes of the warp, in every "
    "lane.")
warp_reduce_bitor = _warp_reduce(
    "bitor", "The bitwise or of the integer `value` of the lanes of the warp, in every lane.")


__all__ = ["get_lane_idx", "get_warp_idx", "get_warp_idx_sync", "get_warp_group_idx",
           "shuffle_elect", "shfl_sync", "shfl_xor", "shfl_down", "shfl_up", "any_sync",
           "all_sync", "ballot_sync", "ballot", "activemask", "match_any_sync",
           "match_all_sync", "syncthreads_count", "syncthreads_and", "syncthreads_or",
           "sync_warp", "thread_return", "warp_reduce_sum", "warp_reduce_max", "warp_reduce_min",
           "warp_reduce_bitand", "warp_reduce_bitor"]
