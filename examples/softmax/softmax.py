"""Scaled row softmax, y = softmax(scale * x) over the last axis, float16 in
and out, float32 inside. A block owns `block_M` whole rows in a register
fragment: one max-reduction, exp2 with the scale folded into log2(e), one
sum-reduction (the attention softmax without the online rescaling):
`softmax` in python/tilelang_mlir/kernels/softmax.py.

    python examples/softmax/softmax.py [--target cpu|cuda] [--rows R --cols C]
"""

import argparse

import numpy as np

import tilelang_mlir as tl
from tilelang_mlir.kernels.softmax import reference, softmax
from tilelang_mlir.testing import relative_error, to_device, to_numpy


def programs(M=8192, N=2048):
    return [("softmax_f16", softmax(M, N, scale=0.125), [1])]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--cols", type=int, default=2048)
    args = parser.parse_args(argv)
    M, N, scale = args.rows, args.cols, 0.125
    kernel = tl.compile(softmax(M, N, scale), out_idx=[1], target=args.target)
    x = (np.random.default_rng().standard_normal((M, N)) * 8).astype(np.float16)
    dx = to_device(x, kernel.device)
    y = to_numpy(kernel(dx))
    err = relative_error(y, reference(x, scale))
    seconds = kernel.time(dx)
    print(f"target {kernel.target}: softmax over {M}x{N} float16, relative error {err:.1e}, "
          f"{seconds * 1e3:.3f} ms ({2 * M * N * 2 / seconds / 1e9:.0f} GB/s)")
    if not err < 2e-3:
        raise SystemExit(f"FAILED: relative error {err:.1e}")
    return err


if __name__ == "__main__":
    main()
