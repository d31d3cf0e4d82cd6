"""RMS norm, y = x / sqrt(mean(x^2) + eps) * w, bfloat16 in and out,
float32 inside. A block owns `block_M` whole rows; the weight is loaded once
per block.

Offers `rms_norm` (the program).
"""

import tilelang_mlir.language as T


def rms_norm(M, N, eps=1e-6, block_M=4, dtype="bfloat16"):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x = T.alloc_fragment((block_M, N), dtype)
            sq = T.alloc_fragment((block_M, N), "float32")
            w = T.alloc_fragment((N,), dtype)
            ms = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.copy(W, w)
            for i, j in T.Parallel(block_M, N):
                sq[i, j] = T.float32(x[i, j]) * T.float32(x[i, j])
            T.reduce_sum(sq, ms, dim=1)
            for i in T.Parallel(block_M):
                ms[i] = T.rsqrt(ms[i] / N + eps)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.cast(T.float32(x[i, j]) * ms[i] * T.float32(w[j]), dtype)
            T.copy(x, Y[bx * block_M, 0])

    return main
