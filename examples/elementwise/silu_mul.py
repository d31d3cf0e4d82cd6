"""Fused SiLU gate, out = silu(a) * b, in float16: the elementwise half of a
SwiGLU MLP (`silu_mul` in python/tilelang_mlir/kernels/silu_mul.py). Each
block copies a tile of both inputs into register fragments, computes in
float32 and writes float16 back.

    python examples/elementwise/silu_mul.py [--target cpu|cuda] [--rows R --cols C]
"""

import argparse

import numpy as np

import tilelang_mlir as tl
from tilelang_mlir.kernels.silu_mul import silu_mul
from tilelang_mlir.testing import relative_error, to_device, to_numpy


def programs(M=4096, N=4096):
    """(name, program, out_idx) of every kernel of this example (CI compiles
    them for sm_80 and sm_90a)."""
    return [("silu_mul_f16", silu_mul(M, N), [2])]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=4096)
    args = parser.parse_args(argv)
    M, N = args.rows, args.cols
    kernel = tl.compile(silu_mul(M, N), out_idx=[2], target=args.target)
    rng = np.random.default_rng()
    a = (rng.standard_normal((M, N)) * 3).astype(np.float16)
    b = rng.standard_normal((M, N)).astype(np.float16)
    da, db = to_device(a, kernel.device), to_device(b, kernel.device)
    out = to_numpy(kernel(da, db))
    x = a.astype(np.float64)
    err = relative_error(out, x / (1 + np.exp(-x)) * b.astype(np.float64))
    seconds = kernel.time(da, db)
    print(f"target {kernel.target}: silu(a) * b on {M}x{N} float16, relative error {err:.1e}, "
          f"{seconds * 1e3:.3f} ms ({3 * M * N * 2 / seconds / 1e9:.0f} GB/s)")
    if not err < 2e-3:
        raise SystemExit(f"FAILED: relative error {err:.1e}")
    return err


if __name__ == "__main__":
    main()
