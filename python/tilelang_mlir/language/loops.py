"""Loop constructs: `for ... in T.Parallel / T.Pipelined / T.serial / ...`."""

from __future__ import annotations

from typing import Optional, Sequence


class Parallel:
    """`for i, j in T.Parallel(M, N)`: an elementwise loop nest over a tile;
    its iterations are shared by the threads of the block.

    `coalesced_width`: how many consecutive innermost elements each thread
    takes when nothing else (a gemm, an annotation) fixes the layout; 8 for
    16-bit and 16 for 8-bit data give 16-byte accesses (default 4)."""

    def __init__(self, *extents, coalesced_width: Optional[int] = None):
        if not extents:
            raise TypeError("T.Parallel needs at least one extent")
        self.extents = extents
        self.coalesced_width = coalesced_width


class Pipelined:
    """`for k in T.Pipelined(n, num_stages=3)`: a serial loop whose copies into
    shared memory the compiler overlaps with compute."""

    def __init__(self, start, stop=None, num_stages: int = 0,
                 order: Optional[Sequence[int]] = None,
                 stage: Optional[Sequence[int]] = None,
                 sync=None, group: Optional[Sequence[Sequence[int]]] = None):
        if stop is None:
            start, stop = 0, start
        self.start, self.stop = start, stop
        self.num_stages = num_stages
        self.order, self.stage, self.group = order, stage, group


class Serial:
    def __init__(self, start, stop=None, step=1, annotation: Optional[str] = None):
        if stop is None:
            start, stop = 0, start
        self.start, self.stop, self.step = start, stop, step
        self.annotation = annotation


def serial(start, stop=None, step=1) -> Serial:
    """A sequential loop (`range` in a tile program means the same)."""
    return Serial(start, stop, step)


def unroll(start, stop=None, step=1) -> Serial:
    """A sequential loop the compiler should unroll."""
    return Serial(start, stop, step, "tile.unroll")


def vectorized(start, stop=None, step=1) -> Serial:
    """A sequential loop the compiler should vectorize."""
    return Serial(start, stop, step, "tile.vectorize")
