"""The seed GEMM: C = A @ B as a short tile program (`matmul` in
python/tilelang_mlir/kernels/gemm.py: shared-memory tiles of A and B,
a pipelined loop over K, `T.gemm` into a float32 fragment), with a small
autotuning space for Hopper (block sizes, pipeline stages, threads, warp
policy).

Run it with `make demo` (or `python examples/gemm/gemm.py [--target cpu]`): it
compiles for the best available target (a CUDA GPU if present, else the
CPU), checks the result against NumPy and prints the time. `--autotune`
tunes over CONFIGS instead with `tl.autotune` (every entry compiled in
parallel, checked, timed; the fastest kept and cached on disk; meant for the
GPU; benchmarks/gemm.py uses the same space).
"""

import argparse
import time

import numpy as np

import tilelang_mlir as tl
from tilelang_mlir.kernels.gemm import CONFIGS, DEFAULT, autotune, describe, matmul
from tilelang_mlir.testing import relative_error, to_device, to_numpy


def programs(n=4096):
    """(name, program, out_idx) of every kernel of this example (CI compiles
    them for sm_80 and sm_90a)."""
    return [("gemm_f16", matmul(n, n, n, **DEFAULT), [2]),
            ("gemm_bf16", matmul(n, n, n, **DEFAULT, dtype="bfloat16"), [2]),
            ("gemm_f16_hopper", matmul(n, n, n, **CONFIGS[0]), [2])]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--autotune", action="store_true",
                        help="try every entry of CONFIGS and keep the fastest (GPU)")
    args = parser.parse_args(argv)
    n = args.size

    t0 = time.perf_counter()
    config = DEFAULT
    if args.autotune:
        config, kernel, _ = autotune(n, n, n, "float16", args.target)
    else:
        kernel = tl.compile(matmul(n, n, n, **config), out_idx=[2], target=args.target)
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
    print(f"config          : {describe(config)}")
    tuned = " (autotuning included)" if args.autotune else ""
    print(f"compile         : {compile_s:.2f} s{tuned}")
    print(f"relative error  : {rel:.2e} (vs float64 NumPy)")
    print(f"time            : {seconds * 1e3:.2f} ms ({2 * n ** 3 / seconds / 1e9:.1f} GFLOP/s)")
    print(f"C[0, :4]        : {c[0, :4]}")
    if not rel < 1e-2:
        raise SystemExit(f"FAILED: relative error {rel:.2e} is too large")
    print("OK")


if __name__ == "__main__":
    main()
