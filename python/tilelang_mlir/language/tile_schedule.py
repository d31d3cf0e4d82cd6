"""Tile schedulers: `T.PersistentTileScheduler`, TileLang's persistent,
grid-strided walk over the tiles of a 2-D grid, as a `T.meta_class`.

Its state lives in `T.alloc_var` variables made when it is constructed in
the kernel; the methods that update it (`init`, `next_tile`) are inlined
macros, the others (`valid`, `coord`, the state properties) are Python that
builds expressions. Usage:

    with T.Kernel(num_workers, threads=128) as (worker,):
        sched = T.PersistentTileScheduler(m_tiles, n_tiles, num_workers=num_workers)
        sched.init(worker)
        while sched.valid():
            bx, by = sched.m_idx, sched.n_idx
            ...
            sched.next_tile()
"""

from __future__ import annotations

from . import math as tmath
from .allocate import alloc_var
from .meta import meta_class


def _num_sms() -> int:
    try:
        import torch

        if torch.cuda.is_available():
            return int(torch.cuda.get_device_properties(0).multi_processor_count)
    except ImportError:
        pass
    from ..base.errors import TileLangError

    raise TileLangError("T.PersistentTileScheduler: num_workers is the number of multiprocessors "
                        "by default, and no CUDA device is visible to ask; pass num_workers=")


@meta_class
class BaseTileScheduler:
    """The state of a tile scheduler (when `stateful`): the current tile's
    coordinates `m_idx`, `n_idx`, the worker's linear position `linear_idx`
    and the number of tiles it has advanced past, `current_iter`.
    Subclasses decode a linear index (`update_current_idx`) and set the
    total number of tiles that `valid()` compares against."""

    def __init__(self, stateful: bool = True, name=None):
        self._stateful = stateful
        self._name = name
        if stateful:
            self._m_idx = alloc_var("int32")
            self._n_idx = alloc_var("int32")
            self._linear_idx = alloc_var("int32")
            self._current_iter = alloc_var("int32")
        self._total_tiles = 0

    @property
    def m_idx(self):
        """The current tile's row."""
        return self._m_idx[0]

    @property
    def n_idx(self):
        """The current tile's column."""
        return self._n_idx[0]

    @property
    def linear_idx(self):
        """The worker's linear position in the walk."""
        return self._linear_idx[0]

    @property
    def current_iter(self):
        """How many tiles the worker has advanced past (0 at the first)."""
        return self._current_iter[0]

    def update_current_idx(self, linear_idx):
        raise NotImplementedError("a tile scheduler decodes linear indices in "
                                  "update_current_idx")

    def valid(self):
        """Whether the current linear position is a tile (the loop condition)."""
        return self._linear_idx[0] < self._total_tiles


@meta_class
class PersistentTileScheduler(BaseTileScheduler):
    """A persistent walk over an `num_m_tiles` x `num_n_tiles` grid of tiles:
    worker w takes the linear positions w, w + num_workers, ... (default
    num_workers: the device's multiprocessors // cluster_size). A position
    decodes to a tile in panels: the grid (its rows grouped by
    `cluster_size`: m_idx is then a cluster row) is cut along the slow
    axis into panels `swizzle_size` tiles wide, each swept fully along the
    fast axis (M when `column_major`, else N) before the next; the last
    panel may be narrower. `stateful=False` keeps no state and offers only
    `coord(tile_id)`."""

    def __init__(self, num_m_tiles, num_n_tiles, num_workers=None, swizzle_size: int = 1,
                 column_major: bool = True, cluster_size: int = 1, stateful: bool = True,
                 name=None):
        super().__init__(stateful=stateful, name=name)
        self.cluster_size = cluster_size
        if num_workers is None:
            num_workers = _num_sms() // cluster_size
        self.num_workers = num_workers
        self.swizzle_size = swizzle_size
        self._column_major = column_major
        m_clusters = tmath.ceildiv(num_m_tiles, cluster_size)
        self._total_tiles = m_clusters * num_n_tiles
        self._fast, self._slow = ((m_clusters, num_n_tiles) if column_major
                                  else (num_n_tiles, m_clusters))

    def coord(self, tile_id):
        """The (m, n) tile of linear position `tile_id`."""
        fast, slow, swizzle = self._fast, self._slow, self.swizzle_size
        group = tile_id // (fast * swizzle)
        base = group * swizzle
        width = tmath.max(1, tmath.min(swizzle, slow - base))
        in_group = tile_id - group * (fast * swizzle)
        along = in_group // width
        across = base + in_group % width
        return (along, across) if self._column_major else (across, along)

    def update_current_idx(self, linear_idx):
        m, n = self.coord(linear_idx)
        self._m_idx[0] = m
        self._n_idx[0] = n

    def init(self, worker_id):
        self._current_iter[0] = 0
        self._linear_idx[0] = worker_id
        self.update_current_idx(self._linear_idx[0])

    def next_tile(self):
        self._current_iter[0] = self._current_iter[0] + 1
        self._linear_idx[0] = self._linear_idx[0] + self.num_workers
        self.update_current_idx(self._linear_idx[0])


__all__ = ["BaseTileScheduler", "PersistentTileScheduler"]
