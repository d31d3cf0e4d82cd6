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
