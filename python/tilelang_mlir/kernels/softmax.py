"""Scaled row softmax, y = softmax(scale * x) over the last axis, float16 in
and out, float32 inside. A block owns `block_M` whole rows in a register
fragment: one max-reduction, exp2 with the scale folded into log2(e), one
sum-reduction (the attention softmax without the online rescaling).

Offers `softmax` (the program) and `reference` (NumPy).
"""

import math

import numpy as np

import tilelang_mlir.language as T


def softmax(M, N, scale=1.0, block_M=4, dtype="float16"):
    log2e_scale = scale * math.log2(math.e)

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x = T.alloc_fragment((block_M, N), dtype)
            s = T.alloc_fragment((block_M, N), "float32")
            row_max = T.alloc_fragment((block_M,), "float32")
            row_sum = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            for i, j in T.Parallel(block_M, N):
                s[i, j] = T.float32(x[i, j]) * log2e_scale
            T.reduce_max(s, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                s[i, j] = T.exp2(s[i, j] - row_max[i])
            T.reduce_sum(s, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.cast(s[i, j] / row_sum[i], dtype)
            T.copy(x, Y[bx * block_M, 0])

    return main


def reference(x, scale):
    z = x.astype(np.float64) * scale
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)
