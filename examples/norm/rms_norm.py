"""RMS norm, y = x / sqrt(mean(x^2) + eps) * w, bfloat16 in and out,
float32 inside. A block owns `block_M` whole rows; the weight is loaded once
per block (`rms_norm` in python/tilelang_mlir/kernels/rms_norm.py).

    python examples/norm/rms_norm.py [--target cpu|cuda] [--rows R --cols C]
"""

import argparse

import numpy as np

import tilelang_mlir as tl
from tilelang_mlir.kernels.rms_norm import rms_norm
from tilelang_mlir.testing import relative_error, to_device, to_numpy


def programs(M=8192, N=4096):
    return [("rms_norm_bf16", rms_norm(M, N), [2])]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--cols", type=int, default=4096)
    args = parser.parse_args(argv)
    M, N, eps = args.rows, args.cols, 1e-6
    kernel = tl.compile(rms_norm(M, N, eps), out_idx=[2], target=args.target)
    rng = np.random.default_rng()
    x32 = rng.standard_normal((M, N)).astype(np.float32)
    w32 = rng.standard_normal(N).astype(np.float32)
    if kernel.device == "cuda":
        import torch

        dx = to_device(torch.from_numpy(x32).bfloat16(), "cuda")
        dw = to_device(torch.from_numpy(w32).bfloat16(), "cuda")
    else:
        import ml_dtypes

        dx, dw = x32.astype(ml_dtypes.bfloat16), w32.astype(ml_dtypes.bfloat16)
    x64 = to_numpy(dx).astype(np.float64)  # the bfloat16-rounded inputs
    w64 = to_numpy(dw).astype(np.float64)
    y = to_numpy(kernel(dx, dw)).astype(np.float64)
    ref = x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + eps) * w64
    err = relative_error(y, ref)
    seconds = kernel.time(dx, dw)
    print(f"target {kernel.target}: rms norm over {M}x{N} bfloat16, relative error {err:.1e}, "
          f"{seconds * 1e3:.3f} ms ({2 * M * N * 2 / seconds / 1e9:.0f} GB/s)")
    if not err < 1e-2:
        raise SystemExit(f"FAILED: relative error {err:.1e}")
    return err


if __name__ == "__main__":
    main()
