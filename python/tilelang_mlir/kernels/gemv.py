"""GEMV for decode: y = W x with W (N, K) and x (K,) in float16 or bfloat16,
float32 inside. Memory-bound: every element of W is read once.

Each block owns `block_N` rows of W and walks along K in steps of `block_K`;
`coalesced_width=8` gives each thread 8 consecutive elements of a row, so W
arrives in 16-byte loads. The products are accumulated per thread and
reduced across the threads once, at the end.

Offers `gemv` (the program), SHAPES (decode shapes of an 8B-class model)
and `reference`. The weight-only quantized GEMVs are in `dequant`.
"""

import numpy as np

import tilelang_mlir.language as T
from tilelang_mlir.runtime.arrays import to_numpy


def gemv(N, K, block_N=4, block_K=1024, threads=128, dtype="float16"):
    @T.prim_func
    def main(W: T.Tensor((N, K), dtype), X: T.Tensor((K,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=threads) as bx:
            w = T.alloc_fragment((block_N, block_K), dtype)
            x = T.alloc_fragment((block_K,), dtype)
            acc = T.alloc_fragment((block_N, block_K), "float32")
            y = T.alloc_fragment((block_N,), "float32")
            T.clear(acc)
            for k in T.serial(T.ceildiv(K, block_K)):
                T.copy(W[bx * block_N, k * block_K], w)  # zero past the edges
                T.copy(X[k * block_K], x)
                for i, j in T.Parallel(block_N, block_K, coalesced_width=8):
                    acc[i, j] += T.float32(w[i, j]) * T.float32(x[j])
            T.reduce_sum(acc, y, dim=1)
            T.copy(y, Y[bx * block_N])

    return main


# Decode shapes of an 8B-class model (the fused QKV and the MLP projections).
SHAPES = [(8192, 8192), (28672, 8192), (8192, 28672)]


def reference(w, x):
    """W x in float64 from the (rounded) inputs."""
    return to_numpy(w).astype(np.float64) @ to_numpy(x).astype(np.float64)
