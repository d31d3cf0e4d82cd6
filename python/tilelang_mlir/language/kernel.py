"""`with T.Kernel(...) as (bx, by):` launches a grid of thread blocks."""

from __future__ import annotations

from typing import Optional


class KernelLaunch:
    """What `T.Kernel(...)` gives (TileLang's `T.KernelLaunchFrame`): the
    launch a `with` statement opens. Inside the kernel,
    `T.KernelLaunchFrame.Current()` is the frame being built; its methods
    are the T.get_block_* / T.get_thread_* queries of that kernel."""

    def __init__(self, grid, threads, cluster=None):
        self.grid = grid
        self.thread_dims = threads  # an int or the extents (x, y[, z])
        self.cluster = cluster  # blocks per cluster (x, y, z), or None

    def __enter__(self):
        raise TypeError("T.Kernel can only be used inside a T.prim_func")

    def __exit__(self, *exc):
        return False

    def __repr__(self):
        return f"T.Kernel(grid={self.grid}, threads={self.thread_dims})"

    @classmethod
    def Current(cls) -> Optional["KernelLaunch"]:  # noqa: N802 (TileLang's name)
        """The frame of the `with T.Kernel(...)` being built, or None outside
        one (outside a tile program too)."""
        from . import state

        if not state.active():
            return None
        b = state.current()
        if b.kernel_depth == 0:
            return None
        threads = [int(t) for t in b.kernel_op.threads]
        return cls(list(b.grid_extents), threads if len(threads) > 1 else threads[0])

    def get_block_extent(self, dim: int) -> int:
        """The grid extent along `dim` (T.get_block_extent)."""
        return get_block_extent(dim)

    def get_block_extents(self) -> list:
        """The three grid extents (T.get_block_extents)."""
        return get_block_extents()

    def get_thread_extent(self, dim: int) -> int:
        """The block's thread extent along `dim` (T.get_thread_extent)."""
        return get_thread_extent(dim)

    def get_thread_extents(self) -> list:
        """The block's three thread extents (T.get_thread_extents)."""
        return get_thread_extents()

    def get_block_binding(self, dim: int = 0):
        """The block index along `dim` (T.get_block_binding)."""
        return get_block_binding(dim)

    def get_block_bindings(self) -> list:
        """The three block indices (T.get_block_bindings)."""
        return get_block_bindings()

    def get_thread_binding(self, dim: int = 0):
        """The thread index along `dim` (T.get_thread_binding)."""
        from .roles import get_thread_binding

        return get_thread_binding(dim)

    def get_thread_bindings(self) -> list:
        """The thread's three indices (T.get_thread_bindings)."""
        from .roles import get_thread_bindings

        return get_thread_bindings()

    def get_num_threads(self) -> int:
        """The number of threads of a block (the product of its extents)."""
        n = 1
        for e in get_thread_extents():
            n *= e
        return n

    @property
    def blocks(self) -> list:
        """The block indices of the grid's dimensions."""
        from . import state

        b = state.current()
        _block_indices(b, "KernelLaunchFrame.blocks")
        return list(b.block_indices)

    @property
    def threads(self) -> list:
        """The thread indices along x, y and z (T.get_thread_bindings)."""
        return self.get_thread_bindings()

    @property
    def num_threads(self) -> int:
        """The number of threads of a block."""
        return self.get_num_threads()


# TileLang's name of the frame class (`isinstance(k, T.KernelLaunchFrame)`,
# `T.KernelLaunchFrame.Current()`).
KernelLaunchFrame = KernelLaunch


def _normalize_threads(threads) -> list:
    """TileLang's thread-block specification as three extents: None is 128,
    an int is (n, 1, 1), a list or tuple is padded with 1. ValueError for
    another type or a non-positive extent."""
    if threads is None:
        threads = 128
    if isinstance(threads, int) and not isinstance(threads, bool):
        normalized = [threads, 1, 1]
    elif isinstance(threads, (list, tuple)):
        normalized = list(threads) + [1] * (3 - len(threads))
    else:
        raise ValueError("threads must be an integer or a list of integers")
    if len(normalized) > 3:
        raise ValueError(f"threads has at most three extents, got {threads}")
    if any(isinstance(e, int) and e <= 0 for e in normalized):
        raise ValueError(f"threads must be positive, got {threads}")
    return normalized


def Kernel(*grid, threads=None, cluster_dims=None, prelude=None,
           is_cpu=False) -> KernelLaunch:
    """A grid of 0 to 3 dimensions (none: one block) with `threads` threads
    per block (an int or up to three extents, x fastest; default 128). The
    `with` statement binds the block indices. `cluster_dims` (an int or up
    to three extents; sm_90 and newer): the blocks run in thread block
    clusters of that shape (the grid a multiple of it), which
    T.cluster_sync and T.block_rank_in_cluster work over."""
    if prelude is not None:
        from ..base.errors import TileLangError

        raise TileLangError("not supported by tilelang-mlir: T.Kernel(prelude=...) (C/CUDA "
                            "source pasted before the kernel); write the device code in the "
                            "tile language")
    dims = _normalize_threads(threads)
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return KernelLaunch(list(grid) if grid else [1], dims if len(dims) > 1 else dims[0],
                        _cluster(cluster_dims))


def ClusterKernel(*blocks, cluster_dims, threads=None, prelude=None) -> KernelLaunch:
    """T.Kernel(*blocks, threads=threads, cluster_dims=cluster_dims): a grid
    of thread block clusters (sm_90 and newer)."""
    return Kernel(*blocks, threads=threads, cluster_dims=cluster_dims, prelude=prelude)


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


def get_block_extent(dim: int = 0):
    """The number of blocks of the grid along dimension `dim` of the
    enclosing T.Kernel (1 for a dimension the grid does not have)."""
    from . import state

    b = state.current()
    b.require_kernel("T.get_block_extent")
    if not isinstance(dim, int) or not 0 <= dim < 3:
        raise b.error(f"T.get_block_extent: dim is 0, 1 or 2, got {dim!r}")
    extents = b.grid_extents
    return extents[dim] if dim < len(extents) else 1


def get_block_extents():
    """The three grid extents of the enclosing T.Kernel."""
    return [get_block_extent(d) for d in range(3)]


def get_thread_extent(dim: int = 0) -> int:
    """The number of threads of a block along dimension `dim` (x, y, z) of
    the enclosing T.Kernel."""
    from . import state

    b = state.current()
    b.require_kernel("T.get_thread_extent")
    if not isinstance(dim, int) or not 0 <= dim < 3:
        raise b.error(f"T.get_thread_extent: dim is 0, 1 or 2, got {dim!r}")
    dims = list(b.kernel_op.threads) + [1, 1]
    return int(dims[dim])


def get_thread_extents() -> list:
    """The three thread extents of a block of the enclosing T.Kernel."""
    return [get_thread_extent(d) for d in range(3)]
