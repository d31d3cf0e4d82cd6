"""2:4 structured-sparse GEMM: C = A @ B with A 2:4 sparse, as a short tile
program. A arrives compressed (`tilelang_mlir.sparse.compress`): A_sparse
(M x K/2, the kept values) and E (M x K/16 int16, two 2-bit positions per
group of four columns). Per K step the block copies its rows of A_sparse
and E and its columns of B into shared memory (pipelined), and
`T.gemm_sp` runs them on the sparse tensor cores: `wgmma.mma_async.sp` on
sm_90a, `mma.sp` m16n8k32 on sm_80, which read each K step of 32 with half
of A's bytes; the metadata goes from shared memory into the registers the
instruction reads it from.

    python examples/sparse/gemm_sp.py [--target cpu|cuda] [--m M --n N --k K] [--dtype float16|bfloat16]
"""

import argparse

import numpy as np
import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.sparse import compress, random_2_4
from tilelang_mlir.testing import relative_error, to_device, to_numpy


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


def programs(M=1024, N=1024, K=1024):
    return [("gemm_sp_f16", gemm_sp(M, N, K), [3]),
            ("gemm_sp_bf16", gemm_sp(M, N, K, dtype="bfloat16"), [3]),
            # The TMA + warp-specialized form on sm_90a (sized to fit sm_80 too).
            ("gemm_sp_f16_tma", gemm_sp(M, N, K, block_M=128, block_N=128, block_K=128,
                                        num_stages=3, threads=256,
                                        policy=T.GemmWarpPolicy.FullRow), [3])]


def reference(a_dense, b):
    """A @ B in float64 from the (rounded) inputs."""
    return to_numpy(a_dense).astype(np.float64) @ to_numpy(b).astype(np.float64)


def main(argv=None):
    """Compiles, runs and checks the example; returns the relative error."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--m", type=int, default=1024)
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--k", type=int, default=1024)
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    args = parser.parse_args(argv)
    kernel = tl.compile(gemm_sp(args.m, args.n, args.k, dtype=args.dtype), out_idx=[3],
                        target=args.target)
    a = random_2_4(args.m, args.k, args.dtype)
    b = torch.randn(args.k, args.n).to(getattr(torch, args.dtype))
    a_sparse, e = compress(a)
    if kernel.device == "cpu" and args.dtype == "float16":
        a_sparse, e, b = a_sparse.numpy(), e.numpy(), b.numpy()
    c = kernel(*(to_device(x, kernel.device) for x in (a_sparse, e, b)))
    err = relative_error(c, reference(a, b))
    print(f"gemm_sp {args.m}x{args.n}x{args.k} {args.dtype} on {kernel.device}: "
          f"relative error {err:.2e}")
    assert err < 1e-2, err
    return err


if __name__ == "__main__":
    main()
