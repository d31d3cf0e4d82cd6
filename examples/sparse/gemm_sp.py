"""2:4 structured-sparse GEMM: C = A @ B with A 2:4 sparse, as a short tile
program (`gemm_sp` in python/tilelang_mlir/kernels/gemm_sp.py): A arrives
compressed by `tilelang_mlir.sparse.compress` (the kept values and 2-bit
positions), and `T.gemm_sp` runs the tiles on the sparse tensor cores
(`wgmma.mma_async.sp` on sm_90a, `mma.sp` on sm_80). This script checks
the result against a dense float64 product.

    python examples/sparse/gemm_sp.py [--target cpu|cuda] [--m M --n N --k K] [--dtype float16|bfloat16]
"""

import argparse

import torch

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.kernels.gemm_sp import gemm_sp, reference
from tilelang_mlir.sparse import compress, random_2_4
from tilelang_mlir.testing import relative_error, to_device


def programs(M=1024, N=1024, K=1024):
    return [("gemm_sp_f16", gemm_sp(M, N, K), [3]),
            ("gemm_sp_bf16", gemm_sp(M, N, K, dtype="bfloat16"), [3]),
            # The TMA + warp-specialized form on sm_90a (sized to fit sm_80 too).
            ("gemm_sp_f16_tma", gemm_sp(M, N, K, block_M=128, block_N=128, block_K=128,
                                        num_stages=3, threads=256,
                                        policy=T.GemmWarpPolicy.FullRow), [3])]


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
    inputs = [to_device(x, kernel.device) for x in (a_sparse, e, b)]
    err = relative_error(kernel(*inputs), reference(a, b))
    seconds = kernel.time(*inputs)
    flop = 2 * args.m * args.n * args.k  # dense-equivalent
    print(f"gemm_sp {args.m}x{args.n}x{args.k} {args.dtype} on {kernel.device}: "
          f"relative error {err:.2e}, {seconds * 1e3:.3f} ms ({flop / seconds / 1e12:.2f} "
          f"dense-equivalent TFLOP/s)")
    assert err < 1e-2, err
    return err


if __name__ == "__main__":
    main()
