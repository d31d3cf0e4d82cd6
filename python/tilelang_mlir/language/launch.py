"""How a kernel is launched and synchronizes with the grid and the stream,
with TileLang's names and meanings: programmatic dependent launch
(T.pdl_trigger / T.pdl_sync), the grid barrier of a cooperative launch
(T.sync_grid), and the launch hints T.annotate_min_blocks_per_sm and
T.annotate_l2_hit_ratio."""

from __future__ import annotations

from ._builtin import builtin


@builtin
def pdl_trigger(b):
    """Programmatic dependent launch: once every block has called it (or
    exited), the next kernel of the stream (one that calls T.pdl_sync) may
    start while this one finishes (`griddepcontrol.launch_dependents`;
    sm_90 and newer, as in TileLang; nothing to do on the CPU target, which
    runs kernels in order)."""
    b.pdl(trigger=True)


@builtin
def pdl_sync(b):
    """Programmatic dependent launch: waits until the kernels before this
    one on the stream have completed and their writes are visible
    (`griddepcontrol.wait`); the kernel is launched so that it may start
    before they end (programmatic stream serialization). sm_90 and newer;
    always satisfied on the CPU target."""
    b.pdl(trigger=False)


@builtin
def sync_grid(b):
    """A barrier of every thread of every block of the grid (cooperative
    groups' grid sync). The kernel is launched cooperatively: all its blocks
    must be resident at once (the launch fails, naming the limit, when the
    grid is larger than the device holds). NVIDIA targets only (the CPU runs
    blocks one after another)."""
    b.grid_sync("T.sync_grid")


@builtin
def sync_global(b):
    """T.sync_grid (TileLang's global barrier of the grid)."""
    b.grid_sync("T.sync_global")


@builtin
def annotate_min_blocks_per_sm(b, n: int):
    """Asks the compiler to keep `n` blocks of this kernel resident per
    multiprocessor (`__launch_bounds__`' second argument, `.minnctapersm`
    on NVIDIA: registers are limited to fit them). A hint: results do not
    change; the CPU and AMD targets have no use for it."""
    b.annotate_kernel_int("tile.min_blocks_per_sm", n, "T.annotate_min_blocks_per_sm")


@builtin
def annotate_l2_hit_ratio(b, l2_hit_ratio_map: dict):
    """{global tensor: hit ratio}: launches the kernel with an L2 access
    policy window over that tensor (persisting accesses for `hit ratio` of
    it; CUDA; the last tensor of the map when there are several, as
    TileLang's stream attribute ends up). A hint: results do not change."""
    b.annotate_l2_hit_ratio(l2_hit_ratio_map)


@builtin
def cluster_arrive(b):
    """The executing threads arrive at the barrier of their cluster's blocks,
    releasing their memory accesses (`barrier.cluster.arrive`; sm_90)."""
    b.cluster_barrier("arrive", "T.cluster_arrive")


@builtin
def cluster_arrive_relaxed(b):
    """T.cluster_arrive without ordering memory
    (`barrier.cluster.arrive.relaxed`)."""
    b.cluster_barrier("arrive_relaxed", "T.cluster_arrive_relaxed")


@builtin
def cluster_wait(b):
    """Waits until every thread of every block of the cluster arrived
    (`barrier.cluster.wait`)."""
    b.cluster_barrier("wait", "T.cluster_wait")


@builtin
def cluster_sync(b):
    """T.cluster_arrive then T.cluster_wait: a barrier of the cluster's
    blocks."""
    b.cluster_barrier("arrive", "T.cluster_sync")
    b.cluster_barrier("wait", "T.cluster_sync")


@builtin
def block_rank_in_cluster(b):
    """The rank of the executing block in its cluster (x fastest;
    `%cluster_ctarank`), 0 without clusters. int32."""
    return b.cluster_rank()


__all__ = ["pdl_trigger", "pdl_sync", "sync_grid", "sync_global", "annotate_min_blocks_per_sm",
           "annotate_l2_hit_ratio", "cluster_arrive", "cluster_arrive_relaxed", "cluster_wait",
           "cluster_sync", "block_rank_in_cluster"]
