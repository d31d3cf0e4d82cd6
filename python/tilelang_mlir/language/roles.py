"""The explicit warp-specialization layer: thread roles, user barriers,
register budgets, TMA copies and asynchronous gemms that a program orders
itself, with TileLang's names and meanings.

    tx = T.get_thread_binding()
    bars = T.alloc_barrier(arrive_count=[128, 128])
    if tx < 128:                      # a role: threads [0, 128)
        T.set_max_nreg(240, 1)
        T.barrier_wait(bars[0], 0)
        T.gemm(A_shared, B_shared, C_local)
        T.barrier_arrive(bars[1])     # every thread of the role arrives
    else:                             # threads [128, 256)
        T.set_max_nreg(40, 0)
        T.tma_copy(A[...], A_shared, barrier=bars[0])
        T.barrier_arrive(bars[0])

Inside a role the tile operations run on the role's threads (a T.gemm in a
128-thread role is one warpgroup's; a T.Parallel maps onto its threads), a
fragment belongs to the role that uses it, and the barriers the compiler
inserts synchronize only the role. Roles synchronize with each other only
through the program's barriers. Automatic warp specialization and software
pipelining step aside for such a kernel.
"""

from __future__ import annotations

from ._builtin import builtin
from .tir import _unsupported


class WarpgroupRole:
    """`with T.ws(i, ...)`: a role of warpgroups i, ... (128 threads each)."""

    def __init__(self, ids):
        self.ids = tuple(ids)

    def __enter__(self):
        raise TypeError("T.ws can only be used inside a T.prim_func")

    def __exit__(self, *exc):
        return False


def ws(*warp_group_ids) -> WarpgroupRole:
    """`with T.ws(0):` runs the body on warpgroup 0 (threads [0, 128)) only;
    `T.ws(0, 1)` on threads [0, 256). TileLang's warp-specialization scope."""
    return WarpgroupRole(warp_group_ids)


@builtin
def get_thread_binding(b, dim: int = 0):
    """The index of the executing thread in its block (`threadIdx.x`).
    Comparisons of it with constants in an `if` give threads roles."""
    return b.thread_binding(dim)


def get_thread_bindings():
    """The thread's index along x, y and z of its block (0 along a dimension
    of extent 1)."""
    return [get_thread_binding(d) for d in range(3)]


@builtin
def alloc_barrier(b, arrive_count):
    """Transaction barriers (mbarriers) in shared memory: one per entry of
    `arrive_count` (an int: one barrier), each completing a phase when that
    many arrivals came and the bytes of the TMA copies on it landed."""
    return b.alloc_barrier(arrive_count)


@builtin
def barrier_arrive(b, bar):
    """Every executing thread arrives once on `bar` (a barrier or one
    element of a T.alloc_barrier array)."""
    b.barrier_arrive(bar)


@builtin
def mbarrier_arrive(b, mbarrier, cta_id=None):
    """T.barrier_arrive under its other name; with `cta_id`, every executing
    thread arrives on that barrier of the block of rank `cta_id` in the
    cluster (a T.alloc_cluster_barrier)."""
    if cta_id is not None:
        b.arrive_on_rank(mbarrier, cta_id, "T.mbarrier_arrive")
        return
    b.barrier_arrive(mbarrier, "T.mbarrier_arrive")


@builtin
def ptx_arrive_cluster_barrier(b, mbarrier, cta_id):
    """Every executing thread arrives on barrier `mbarrier` of the block of
    rank `cta_id` in the cluster (a T.alloc_cluster_barrier):
    T.mbarrier_arrive(mbarrier, cta_id) under TileLang's lower-level name
    (`mbarrier.arrive.shared::cluster`, sm_90)."""
    b.arrive_on_rank(mbarrier, cta_id, "T.ptx_arrive_cluster_barrier")


@builtin
def mbarrier_arrive_expect_tx(b, mbarrier, tx):
    """Every executing thread arrives once on `mbarrier` and announces `tx`
    more transaction bytes (a compile-time count) that asynchronous copies
    onto it will deliver (`mbarrier.arrive.expect_tx`, sm_90): the phase
    completes when the arrivals came and the bytes landed. Usually run by
    one thread (`if tx == 0:`)."""
    b.barrier_arrive_expect_tx(mbarrier, tx, "T.mbarrier_arrive_expect_tx")


@builtin
def alloc_cluster_barrier(b, arrive_count):
    """Transaction barriers (T.alloc_barrier) that the other blocks of the
    cluster may arrive on (T.mbarrier_arrive(bar, cta_id)): the blocks of
    the cluster synchronize after initializing them."""
    return b.alloc_barrier(arrive_count)


@builtin
def barrier_wait(b, bar, parity):
    """Every executing thread waits until the phase of `bar` with parity
    `parity` (0 or 1) completed; on a fresh barrier, parity 1 passes at
    once and parity 0 waits for the first phase."""
    b.barrier_wait(bar, parity)


@builtin
def mbarrier_wait_parity(b, mbarrier, parity):
    """T.barrier_wait under its other name."""
    b.barrier_wait(mbarrier, parity, "T.mbarrier_wait_parity")


@builtin
def set_max_nreg(b, reg_count: int, is_inc: int):
    """The warpgroups of the current role raise (is_inc=1) or lower
    (is_inc=0) their per-thread register budget to `reg_count`
    (setmaxnreg, sm_90a)."""
    b.set_max_nreg(reg_count, is_inc)


def inc_max_nreg(reg_count: int):
    """T.set_max_nreg(reg_count, 1)."""
    set_max_nreg(reg_count, 1)


def dec_max_nreg(reg_count: int):
    """T.set_max_nreg(reg_count, 0)."""
    set_max_nreg(reg_count, 0)


@builtin
def fence_proxy_async(b):
    """Makes the executing thread's shared-memory writes visible to later
    TMA and wgmma reads (after a barrier)."""
    b.fence_proxy_async()


@builtin
def sync_threads(b, barrier_id=None, arrive_count=None):
    """No arguments: a barrier over the block (inside a role: over the
    role). With an id: `bar.sync barrier_id, arrive_count`, the first
    `arrive_count` threads (all of the block's when omitted) to reach
    hardware barrier `barrier_id` (0 to 15; both may be computed at run
    time)."""
    if barrier_id is None and arrive_count is None:
        b.block_barrier()
        return
    if barrier_id is None:
        raise b.error("T.sync_threads: an arrive_count needs a barrier_id")
    b.named_barrier(barrier_id, arrive_count)


@builtin
def named_barrier_arrive(b, barrier_id, thread_count):
    """The executing threads arrive at hardware barrier `barrier_id` (0 to
    15) of `thread_count` threads without waiting (`bar.arrive`); the
    threads that T.sync_threads(barrier_id, thread_count) on it wait for
    them."""
    b.named_barrier(barrier_id, thread_count, arrive=True)


@builtin
def tma_copy(b, src, dst, *, barrier=None, cluster_mask=None, leader_scope_threads=None,
             eviction_policy=None, annotations=None):
    """A TMA load of a global tile into a shared buffer. One thread of the
    executing ones issues it and announces its bytes on `barrier` (without
    arriving): the program's own T.barrier_arrive calls complete the phase,
    and a T.barrier_wait on it sees the data.

    With `cluster_mask` (a kernel of clusters), a multicast: the lowest
    rank of the mask loads the tile into the same place of every block of
    the mask, each block's barrier announcing the whole tile.

    From a shared buffer to a global tile (TileLang's TMA store, without a
    barrier): the executing threads write the tile; the shared buffer has
    been read when the next operation runs (see T.tma_store_wait)."""
    for name, value in (("leader_scope_threads", leader_scope_threads),
                        ("eviction_policy", eviction_policy), ("annotations", annotations)):
        if value is not None:
            raise b.error(f"not supported by tilelang-mlir: T.tma_copy(..., {name}=...)")
    b.tma_copy(src, dst, barrier, cluster_mask=cluster_mask)


@builtin
def tma_store_arrive(b):
    """TileLang commits the TMA stores issued so far as one group
    (cp.async.bulk.commit_group). A T.tma_copy to global memory here has
    read its shared buffer before the next operation runs: no store is
    left in flight, so there is no group to commit."""
    b.require_kernel("T.tma_store_arrive")


@builtin
def tma_store_wait(b, count: int = 0, read: bool = True):
    """Waits until at most `count` groups of TMA stores are in flight;
    with `read` (the default) only until they have read their shared
    buffers. Those reads are done here when T.tma_copy returns, so
    `read=True` has nothing to wait for; `read=False` also makes the
    stores' global writes visible: the block's threads (the role's, inside
    a role), which wrote the tile together, synchronize (T.sync_threads)."""
    from .values import static_int

    count = static_int(count, "T.tma_store_wait count")
    if count < 0:
        raise b.error(f"T.tma_store_wait: count must be non-negative, got {count}")
    b.require_kernel("T.tma_store_wait")
    if not read:
        b.block_barrier()


@builtin
def access_ptr(b, base, access_type="r", *extents, offset=0, extent=None, ignore_last_ndim=0):
    """The address of element `base` (`X[i, j]`) for a per-thread copy
    (T.ptx_cp_async); `extents` / `extent` (how many elements it covers)
    are TileLang's and are implied here by the copy's element count."""
    return b.access_ptr(base, access_type, *extents, offset=offset, extent=extent,
                        ignore_last_ndim=ignore_last_ndim)


@builtin
def tvm_access_ptr(b, ptype, data, offset, extent, rw_mask):
    """TVM's `T.tvm_access_ptr(T.type_annotation(dtype), X.data, offset,
    extent, mask)`: the address of the element `offset` places after the
    first of buffer X (row-major), for T.ptx_cp_async and the like; `mask`
    1 reads, 2 writes, 3 both. As T.access_ptr(X[...], mask)."""
    from ..base import dtypes as dt
    from .element_access import row_major_index
    from .values import BufferData, BufferRef, static_int, to_index

    if not isinstance(data, BufferData):
        raise b.error("T.tvm_access_ptr takes the storage of a buffer (`X.data`), got "
                      f"{data!r}")
    buf = data.buffer
    if ptype is not None and dt.as_dtype(ptype) != buf.dtype:
        raise b.error(f"T.tvm_access_ptr of {buf.name!r} ({buf.dtype}) typed as "
                      f"{dt.as_dtype(ptype)}: a pointer to other elements is not supported")
    dims = [static_int(d, f"a dimension of {buf.name!r}") for d in buf.shape]
    indices = row_major_index(to_index(offset, "T.tvm_access_ptr offset"), dims)
    return b.access_ptr(BufferRef(buf, tuple(indices)),
                        static_int(rw_mask, "T.tvm_access_ptr mask"))


def type_annotation(dtype):
    """TVM's `T.type_annotation(dtype)`: the dtype, as T.tvm_access_ptr takes
    it."""
    from ..base import dtypes as dt

    return dt.as_dtype(dtype)


@builtin
def ptx_cp_async(b, dst_access_ptr, src_access_ptr, num_elems, predicate=None):
    """The executing thread copies `num_elems` consecutive elements (4, 8 or
    16 bytes) of a global tensor into a shared buffer asynchronously
    (cp.async; reads past the end of the tensor give zeros). They land for
    the thread at T.ptx_wait_group, or arrive on a barrier through
    T.cp_async_barrier_noinc."""
    b.cp_async(dst_access_ptr, src_access_ptr, num_elems, predicate)


@builtin
def cp_async_barrier_noinc(b, barrier):
    """Every executing thread arrives once on `barrier` when its earlier
    T.ptx_cp_async copies have landed (cp.async.mbarrier.arrive.noinc: the
    arrival counts toward the barrier's arrive count)."""
    b.barrier_arrive(barrier, "T.cp_async_barrier_noinc", after_copies=True)


@builtin
def ptx_commit_group(b):
    """Closes the executing thread's group of T.ptx_cp_async copies."""
    b.async_commit()


@builtin
def ptx_wait_group(b, num: int = 0):
    """Waits until at most `num` of the executing thread's groups of
    T.ptx_cp_async copies are in flight."""
    b.async_wait(num)


def _refused(name: str, why: str, rule: str):
    """A name the compat route refuses at its call (compat/refusals.py's
    AT_CALL): the error at the program's line says why and names the rule
    that puts it out of scope."""
    def fn(*args, **kwargs):
        raise _unsupported(f"{name} ({why}) (out of scope: {rule})")

    fn.__name__ = name.split(".")[-1]
    fn.__doc__ = f"Not supported: {why}."
    return fn


mbarrier_expect_tx = _refused(
    "T.mbarrier_expect_tx", "it announces the bytes of TMA loads that a program issues itself "
    "through T.tma_load or TileLang's C++ TMA helpers over T.create_tma_descriptor, PTX-level "
    "TIR intrinsics (TVM IR) refused here: T.tma_copy announces its own bytes on its barrier",
    "TVM's IR and pass APIs")


def _reg_hint(b, name: str, reg_count) -> int:
    from .values import static_int

    n = static_int(reg_count, f"T.{name} reg_count")
    if not 24 <= n <= 240:  # TileLang's check of the hint
        raise b.error(f"T.{name}: invalid register hint {n} (from 24 to 240)")
    return n


@builtin
def annotate_producer_reg_dealloc(b, reg_count: int = 24):
    """TileLang's register hint for the producer role it is written in: the
    role's warpgroups lower their per-thread budget to `reg_count` there
    (T.set_max_nreg(reg_count, 0))."""
    b.set_max_nreg(_reg_hint(b, "annotate_producer_reg_dealloc", reg_count), 0)


@builtin
def annotate_consumer_reg_alloc(b, reg_count: int = 240):
    """TileLang's register hint for the consumer role it is written in: the
    role's warpgroups raise their per-thread budget to `reg_count` there
    (T.set_max_nreg(reg_count, 1))."""
    b.set_max_nreg(_reg_hint(b, "annotate_consumer_reg_alloc", reg_count), 1)
