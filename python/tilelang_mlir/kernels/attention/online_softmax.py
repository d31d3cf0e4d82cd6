"""The online softmax shared by the attention kernels:

- `softmax_state`: the fragments of its row state (`SoftmaxState`), and
  `softmax_reset`, which starts it (and the accumulator) before the first
  KV tile.
- `softmax_step`: one KV tile of the online softmax, as a macro inlined in
  the kernel: the scores S (rows x cols, already masked) become
  P = exp2(scale (S - m)) with the running row maximum m and row sum l
  updated, and the accumulator rescaled by alpha = exp2(scale (m_old - m)).
- `softmax_finish`: the accumulator divided by its row sum and the
  natural-log LSE of the scaled scores; where rows may see no key
  (`empty_rows`: an empty split of a short sequence) such a row gets O = 0
  and LSE = -inf.
- for split-KV decoding (flash_decode.py, mla_decode.py): `split_tiles`
  (the KV tiles of one split of a sequence), `page_of` (a token's page in
  the block table; index_checks.py checks both index tensors), `mask_past_end` (the keys of
  the sequence's last tile past its end), and `splitkv_combine`, the
  combine kernel: the partial
  outputs O_s (each already normalized) and their LSEs lse_s become
  O = sum_s exp(lse_s - lse) O_s with lse = log sum_s exp(lse_s).

The scores are in units where softmax(x / sqrt(d)) is exp2(scale x), scale =
log2(e) / sqrt(d).
"""

import math
from typing import NamedTuple

import tilelang_mlir.language as T

LN2 = math.log(2)


class SoftmaxState(NamedTuple):
    """The row state of the online softmax: fragments of `rows` float32."""

    m: object       # running row maximum of S
    m_prev: object  # the maximum before this tile
    alpha: object   # exp2(scale * (m_prev - m)): the accumulator's rescaling
    l: object       # running row sum of exp2
    l_tile: object  # this tile's row sum
    lse: object     # the natural-log LSE of the scaled scores (softmax_finish)


@T.macro
def softmax_state(rows):
    m = T.alloc_fragment((rows,), "float32")
    m_prev = T.alloc_fragment((rows,), "float32")
    alpha = T.alloc_fragment((rows,), "float32")
    l = T.alloc_fragment((rows,), "float32")
    l_tile = T.alloc_fragment((rows,), "float32")
    lse = T.alloc_fragment((rows,), "float32")
    return SoftmaxState(m, m_prev, alpha, l, l_tile, lse)


@T.macro
def softmax_reset(state, acc_o):
    """Before the first KV tile: O = 0, l = 0, m = -inf."""
    T.clear(acc_o)
    T.clear(state.l)
    T.fill(state.m, -T.infinity("float32"))


@T.macro
def softmax_step(S, state, acc_o, rows, cols, dim, scale):
    m, m_prev, alpha, l, l_tile, _ = state
    T.copy(m, m_prev)
    T.reduce_max(S, m, dim=1, clear=False)
    for i in T.Parallel(rows):
        alpha[i] = T.exp2((m_prev[i] - m[i]) * scale)
    for i, j in T.Parallel(rows, cols):
        S[i, j] = T.exp2(S[i, j] * scale - m[i] * scale)
    T.reduce_sum(S, l_tile, dim=1)
    for i in T.Parallel(rows):
        l[i] = l[i] * alpha[i] + l_tile[i]
    for i, j in T.Parallel(rows, dim):
        acc_o[i, j] *= alpha[i]


@T.macro
def softmax_finish(acc_o, state, rows, dim, scale, empty_rows):
    m, l, lse = state.m, state.l, state.lse
    for i in T.Parallel(rows):
        if empty_rows:
            lse[i] = T.if_then_else(l[i] > 0, (T.log2(l[i]) + m[i] * scale) * LN2,
                                    -T.infinity("float32"))
            l[i] = T.if_then_else(l[i] > 0, 1 / l[i], 0)
        else:
            lse[i] = (T.log2(l[i]) + m[i] * scale) * LN2
            l[i] = 1 / l[i]
    for i, j in T.Parallel(rows, dim):
        acc_o[i, j] *= l[i]


@T.macro
def split_tiles(cache_seqlens, b, split, num_splits, block_N):
    """(seqlen, first, n_tiles): sequence b's length, and the first KV tile
    and the number of tiles of share `split` of its ceil(seqlen / block_N)
    tiles (none for a share past its end). The lengths are not checked here
    (kernels/attention/index_checks.py: a device assertion in this kernel
    would serialize its wgmma)."""
    seqlen = cache_seqlens[b] + 0  # (a value: a bare element would be re-read at each use)
    n_blocks = T.ceildiv(seqlen, block_N)  # KV tiles of the sequence
    per_split = T.ceildiv(n_blocks, num_splits)
    first = split * per_split
    n_tiles = T.max(T.min(per_split, n_blocks - first), 0)
    return seqlen, first, n_tiles


def page_of(block_table, b, token, page_size):
    """The physical page of token `token` of sequence b (block_table[b,
    token // page_size]; checked by index_checks.check_pages)."""
    return block_table[b, token // page_size] + 0


@T.macro
def mask_past_end(S, token, seqlen, rows, cols):
    """-inf for the scores of keys token + j past the sequence's end (only
    the last tile, the one crossing it, has any)."""
    if token + cols > seqlen:
        for i, j in T.Parallel(rows, cols):
            S[i, j] = T.if_then_else(token + j < seqlen, S[i, j], -T.infinity("float32"))


def combine_tile(num_splits, dim, threads=128):
    """The dim columns of one combine block: the (num_splits x columns)
    partial tile is loaded at once, about 32 floats a thread (so that
    every split's read is in flight together), at least 16 columns."""
    cols = dim
    while cols > 16 and num_splits * cols > 32 * threads:
        cols //= 2
    return math.gcd(dim, cols)


def splitkv_combine(batch, heads, num_splits, dim, threads=128, dtype="float16"):
    """O[b, h] (dtype) from O_part (batch, num_splits, heads, dim) and
    LSE_part (batch, num_splits, heads), both float32. Every head needs one
    non-empty split (a sequence of at least one token).

    One block per (sequence, head, block_D columns): the block issues the
    reads of all its splits' partial columns and of their LSEs together
    (one round trip to memory, not one per split), weighs the partials by
    exp(lse_s - lse) and sums them over the splits (a reduction along the
    tile's first dimension)."""
    accum = "float32"
    block_D = combine_tile(num_splits, dim, threads)

    @T.prim_func
    def main(O_part: T.Tensor((batch, num_splits, heads, dim), accum),
             LSE_part: T.Tensor((batch, num_splits, heads), accum),
             O: T.Tensor((batch, heads, dim), dtype)):
        with T.Kernel(batch, heads, dim // block_D, threads=threads) as (bx, by, bz):
            part = T.alloc_fragment((num_splits, block_D), accum)
            lse_s = T.alloc_fragment((1, num_splits), accum)
            lse_max = T.alloc_fragment((1,), accum)
            total = T.alloc_fragment((1,), accum)
            weight = T.alloc_shared((num_splits,), accum)  # read by split index
            acc_o = T.alloc_fragment((block_D,), accum)
            for s, j in T.Parallel(num_splits, block_D):  # (first: the long reads)
                part[s, j] = O_part[bx, s, by, bz * block_D + j]
            for z, s in T.Parallel(1, num_splits):
                lse_s[z, s] = LSE_part[bx, s, by]
            T.reduce_max(lse_s, lse_max, dim=1)
            for z in T.Parallel(1):  # (every head has a non-empty split)
                lse_max[z] = T.max(lse_max[z], -3.0e38)
            for z, s in T.Parallel(1, num_splits):
                lse_s[z, s] = T.exp(lse_s[z, s] - lse_max[z])
            T.reduce_sum(lse_s, total, dim=1)
            for z, s in T.Parallel(1, num_splits):
                weight[s] = lse_s[z, s] / total[z]
            for s, j in T.Parallel(num_splits, block_D):
                part[s, j] *= weight[s]
            T.reduce_sum(part, acc_o, dim=0)
            T.copy(acc_o, O[bx, by, bz * block_D])

    return main
