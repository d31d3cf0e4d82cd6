"""The online softmax shared by the attention kernels:

- `softmax_step`: one KV tile of the online softmax, as a macro inlined in
  the kernel: the scores S (rows x cols, already masked) become
  P = exp2(scale (S - m)) with the running row maximum m and row sum l
  updated, and the accumulator rescaled by alpha = exp2(scale (m_old - m)).
- `softmax_finish`: the accumulator divided by its row sum and the
  natural-log LSE of the scaled scores; a row that saw no key (an empty
  split of a short sequence) gets O = 0 and LSE = -inf.
- `splitkv_combine`: the combine kernel of split-KV decoding: the partial
  outputs O_s (each already normalized) and their LSEs lse_s become
  O = sum_s exp(lse_s - lse) O_s with lse = log sum_s exp(lse_s).

The scores are in units where softmax(x / sqrt(d)) is exp2(scale x), scale =
log2(e) / sqrt(d).
"""

import math

import tilelang_mlir.language as T

LN2 = math.log(2)


@T.macro
def softmax_step(S, m, m_prev, alpha, l, l_tile, acc_o, rows, cols, dim, scale):
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
def softmax_finish(acc_o, m, l, lse, rows, dim, scale):
    for i in T.Parallel(rows):
        lse[i] = T.if_then_else(l[i] > 0, (T.log2(l[i]) + m[i] * scale) * LN2,
                                -T.infinity("float32"))
        l[i] = T.if_then_else(l[i] > 0, 1 / l[i], 0)
    for i, j in T.Parallel(rows, dim):
        acc_o[i, j] *= l[i]


def splitkv_combine(batch, heads, num_splits, dim, block_H=16, threads=128, dtype="float16"):
    """O[b, h] (dtype) from O_part (batch, num_splits, heads, dim) and
    LSE_part (batch, num_splits, heads), both float32. Every head needs one
    non-empty split (a sequence of at least one token)."""
    accum = "float32"
    block_H = math.gcd(heads, block_H)

    @T.prim_func
    def main(O_part: T.Tensor((batch, num_splits, heads, dim), accum),
             LSE_part: T.Tensor((batch, num_splits, heads), accum),
             O: T.Tensor((batch, heads, dim), dtype)):
        with T.Kernel(batch, heads // block_H, threads=threads) as (bx, by):
            lse_s = T.alloc_fragment((block_H, num_splits), accum)
            weight = T.alloc_shared((block_H, num_splits), accum)  # read by split index
            lse_max = T.alloc_fragment((block_H,), accum)
            total = T.alloc_fragment((block_H,), accum)
            part = T.alloc_fragment((block_H, dim), accum)
            acc_o = T.alloc_fragment((block_H, dim), accum)
            for i, s in T.Parallel(block_H, num_splits):
                lse_s[i, s] = LSE_part[bx, s, by * block_H + i]
            T.reduce_max(lse_s, lse_max, dim=1)
            for i in T.Parallel(block_H):  # (every head has a non-empty split)
                lse_max[i] = T.max(lse_max[i], -3.0e38)
            for i, s in T.Parallel(block_H, num_splits):
                lse_s[i, s] = T.exp(lse_s[i, s] - lse_max[i])
            T.reduce_sum(lse_s, total, dim=1)
            for i, s in T.Parallel(block_H, num_splits):
                weight[i, s] = lse_s[i, s] / total[i]
            T.clear(acc_o)
            for s in T.serial(num_splits):
                T.copy(O_part[bx, s, by * block_H, 0], part)
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] += part[i, j] * weight[i, s]
            T.copy(acc_o, O[bx, by * block_H, 0])

    return main
