"""The launch order of attention blocks whose work differs (causal).

A causal backward block's walk is as long as its key block's distance
from the end. Launched one block a tile, blocks start in launch order
(the grid's x fastest), so taking a head's blocks longest first still
leaves the last head's long blocks near the end of the grid: the last
wave runs up to a whole walk longer than the rest (1.7% of a B8 H32 S4096
causal pass in a list-scheduling model; 440 -> 453 TFLOP/s for the D=128
backward on the H200, docs/design/attention.md). `heavy_first_blocks` takes the
launch index apart in chunks of a few (head, batch) pairs: within a chunk
the block index is the slowest, so the long blocks of every pair of the
chunk start before the short ones of any; the chunk keeps the pairs' K/V
and Q rows few enough to stay in L2.
"""

import tilelang_mlir.language as T

CHUNK = 4  # (head, batch) pairs ordered together


def chunk_size(pairs, most=CHUNK):
    """The largest divisor of `pairs` not above `most` (every chunk whole)."""
    return max(c for c in range(1, most + 1) if pairs % c == 0)


@T.macro
def heavy_first_blocks(bx, by, bz, blocks, heads, batch):
    """(rank, head, batch) of launched block (bx, by, bz) of a grid
    (blocks, heads, batch): rank 0 is the first launched of its chunk of
    (head, batch) pairs, and within a chunk a rank's pairs run before the
    next rank's. The caller maps rank to its longest block first."""
    c = chunk_size(heads * batch)
    linear = bx + blocks * (by + heads * bz)
    first = linear // (c * blocks) * c  # the chunk's first pair
    within = linear % (c * blocks)
    pair = first + within % c
    return within // c, pair % heads, pair // heads
