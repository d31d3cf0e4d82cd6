"""The seed GEMM: C = A @ B as a short tile program.

Run it with `make demo` (or `python examples/gemm/gemm.py [--target cpu]`): it
compiles for the best available target (a CUDA GPU if present, else the
CPU), checks the result against NumPy and prints the time.
"""

import argparse
import time

import numpy as np

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.testing import relative_error, to_device, to_numpy


def matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def programs(n=4096):
    """(name, program, out_idx) of every kernel of this example (CI compiles
    them for sm_80 and sm_90a)."""
    return [("gemm_f16", matmul(n, n, n, 128, 128, 32), [2]),
            ("gemm_bf16", matmul(n, n, n, 128, 128, 32, dtype="bfloat16"), [2])]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--size", type=int, default=1024)
    args = parser.parse_args(argv)
    n = args.size

    t0 = time.perf_counter()
    kernel = tl.compile(matmul(n, n, n, 128, 128, 32), out_idx=[2], target=args.target)
    compile_s = time.perf_counter() - t0

    rng = np.random.default_rng()
    a_np = rng.standard_normal((n, n)).astype(np.float16)
    b_np = rng.standard_normal((n, n)).astype(np.float16)
    a, b = to_device(a_np, kernel.device), to_device(b_np, kernel.device)
    c = to_numpy(kernel(a, b))
    rel = relative_error(c, a_np.astype(np.float64) @ b_np.astype(np.float64))
    seconds = kernel.time(a, b)
    print(f"target          : {kernel.target}")
    print(f"problem         : C[{n}x{n}] = A[{n}x{n}] @ B[{n}x{n}], float16 in, float32 accumulate")
    print(f"compile         : {compile_s:.2f} s")
    print(f"relative error  : {rel:.2e} (vs float64 NumPy)")
    print(f"time            : {seconds * 1e3:.2f} ms ({2 * n ** 3 / seconds / 1e9:.1f} GFLOP/s)")
    print(f"C[0, :4]        : {c[0, :4]}")
    if not rel < 1e-2:
        raise SystemExit(f"FAILED: relative error {rel:.2e} is too large")
    print("OK")


if __name__ == "__main__":
    main()
