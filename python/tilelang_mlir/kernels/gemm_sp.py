"""2:4 structured-sparse GEMM: C = A @ B with A 2:4 sparse, as a short tile
program. A arrives compressed (`tilelang_mlir.sparse.compress`): A_sparse
(M x K/2, the kept values) and E (M x K/16 int16, two 2-bit positions per
group of four columns). Per K step the block copies its rows of A_sparse
and E and its columns of B into shared memory (pipelined), and
`T.gemm_sp` runs them on the sparse tensor cores: `wgmma.mma_async.sp` on
sm_90a, `mma.sp` m16n8k32 on sm_80, which read each K step of 32 with half
of A's bytes; the metadata goes from shared memory into the registers the
instruction reads it from.

Offers `gemm_sp` (the program), FAST (the benchmark's tile for Hopper) and
`reference`.
"""

import numpy as np

import tilelang_mlir.language as T
from tilelang_mlir.runtime.arrays import to_numpy


def gemm_sp(M, N, K, block_M=128, block_N=128, block_K=64, num_stages=3, threads=128,
            dtype="float16", accum_dtype="float32", out_dtype=None,
            policy=T.GemmWarpPolicy.Square):
    @T.prim_func
    def main(A_sparse: T.Tensor((M, K // 2), dtype), E: T.Tensor((M, K // 16), "int16"),
             B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), out_dtype or dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K // 2), dtype)
            E_shared = T.alloc_shared((block_M, block_K // 16), "int16")
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.use_swizzle(panel_size=8)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A_sparse[by * block_M, k * block_K // 2], A_shared)
                T.copy(E[by * block_M, k * block_K // 16], E_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm_sp(A_shared, E_shared, B_shared, C_local, policy=policy)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


# The tile of the benchmark (sm_90a: two consumer warpgroups of 64 rows).
FAST = dict(block_M=128, block_N=256, block_K=128, num_stages=2, threads=256,
            policy=T.GemmWarpPolicy.FullRow)


def reference(a_dense, b):
    """A @ B in float64 from the (rounded) inputs."""
    return to_numpy(a_dense).astype(np.float64) @ to_numpy(b).astype(np.float64)
