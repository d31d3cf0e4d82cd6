"""The launch order of causal attention blocks (kernels/attention/
block_order.py): `heavy_first_blocks` run in a kernel that records, for
every launched block, the (rank, head, batch) it takes. Every block of the
grid is taken exactly once, and in launch order the chunks of (head,
batch) pairs come one after the other, each rank's pairs before the next
rank's."""

import numpy as np
import pytest

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.kernels.attention.block_order import chunk_size, heavy_first_blocks
from support.devices import get


def taken(blocks, heads, batch, target):
    @T.prim_func
    def main(Out: T.Tensor((batch, heads, blocks, 3), "int32")):
        with T.Kernel(blocks, heads, batch, threads=32) as (bx, by, bz):
            rank, head, b = heavy_first_blocks(bx, by, bz, blocks, heads, batch)
            Out[bz, by, bx, 0] = T.cast(rank, "int32")
            Out[bz, by, bx, 1] = T.cast(head, "int32")
            Out[bz, by, bx, 2] = T.cast(b, "int32")

    kernel = tl.compile(main, out_idx=[0], target=target)
    return np.asarray(get(kernel()))


@pytest.mark.parametrize("blocks,heads,batch", [(5, 4, 3), (3, 6, 1), (4, 7, 1), (2, 1, 1)])
def test_heavy_first_blocks(blocks, heads, batch, target):
    out = taken(blocks, heads, batch, target)
    c = chunk_size(heads * batch)
    order = out.reshape(-1, 3)  # [bz, by, bx] row-major: launch order (x fastest)
    got = sorted((int(r), int(b), int(h)) for r, h, b in order)
    want = sorted((r, b, h) for r in range(blocks) for h in range(heads) for b in range(batch))
    assert got == want  # every (rank, head, batch) exactly once
    pairs = order[:, 2] * heads + order[:, 1]
    for i, (r, _, _) in enumerate(order):
        chunk, within = divmod(i, c * blocks)
        assert pairs[i] // c == chunk  # the chunks in launch order
        assert r == within // c  # within a chunk, rank by rank
