"""`with T.Kernel(...) as (bx, by):` launches a grid of thread blocks."""

from __future__ import annotations


class KernelLaunch:
    def __init__(self, grid, threads, cluster=None):
        self.grid = grid
        self.threads = threads
        self.cluster = cluster  # blocks per cluster (x, y, z), or None

    def __enter__(self):
        raise TypeError("T.Kernel can only be used inside a T.prim_func")

    def __exit__(self, *exc):
        return False


def Kernel(*grid, threads=128, cluster_dims=None, prelude=None, is_cpu=False) -> KernelLaunch:
    """A grid of 1 to 3 dimensions with `threads` threads per block (an int or
    up to three extents). The `with` statement binds the block indices.
    `cluster_dims` (an int or up to three extents; sm_90 and newer): the
    blocks run in thread block clusters of that shape (the grid a multiple
    of it), which T.cluster_sync and T.block_rank_in_cluster work over."""
    if not grid:
        raise TypeError("T.Kernel needs at least one grid extent")
    return KernelLaunch(list(grid), threads, _cluster(cluster_dims))


def ClusterKernel(*blocks, cluster_dims, threads=128, prelude=None) -> KernelLaunch:
    """T.Kernel(*blocks, threads=threads, cluster_dims=cluster_dims): a grid
    of thread block clusters (sm_90 and newer)."""
    return Kernel(*blocks, threads=threads, cluster_dims=cluster_dims)


def _cluster(dims):
    """[x, y, z] of `cluster_dims`, or None for no clusters (TileLang's
    normalization: an int is (n, 1, 1); (1, 1, 1) is none)."""
    if dims is None:
        return None
    if isinstance(dims, int) and not isinstance(dims, bool):
        dims = [dims]
    if not isinstance(dims, (list, tuple)) or not 1 <= len(dims) <= 3:
        raise TypeError(f"cluster_dims must be an int or 1 to 3 ints, got {dims!r}")
    dims = list(dims) + [1] * (3 - len(dims))
    return None if dims == [1, 1, 1] else dims


def _block_indices(b, what: str):
    b.require_kernel(what)
    return b.block_indices


def get_block_binding(dim: int = 0):
    """The block index along grid dimension `dim` of the enclosing T.Kernel
    (what `with T.Kernel(...) as (bx, by)` binds); 0 for a dimension the
    grid does not have, as in TileLang (its extent is 1)."""
    from . import state

    b = state.current()
    indices = _block_indices(b, "T.get_block_binding")
    if not isinstance(dim, int) or not 0 <= dim < 3:
        raise b.error(f"T.get_block_binding: dim is 0, 1 or 2, got {dim!r}")
    return indices[dim] if dim < len(indices) else 0


def get_block_bindings():
    """The three block indices of the enclosing T.Kernel (0 where the grid
    has fewer dimensions)."""
    return [get_block_binding(d) for d in range(3)]
