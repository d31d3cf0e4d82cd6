"""`with T.Kernel(...) as (bx, by):` launches a grid of thread blocks."""

from __future__ import annotations


class KernelLaunch:
    def __init__(self, grid, threads):
        self.grid = grid
        self.threads = threads

    def __enter__(self):
        raise TypeError("T.Kernel can only be used inside a T.prim_func")

    def __exit__(self, *exc):
        return False


def Kernel(*grid, threads=128, prelude=None, is_cpu=False) -> KernelLaunch:
    """A grid of 1 to 3 dimensions with `threads` threads per block (an int or
    up to three extents). The `with` statement binds the block indices."""
    if not grid:
        raise TypeError("T.Kernel needs at least one grid extent")
    return KernelLaunch(list(grid), threads)


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
