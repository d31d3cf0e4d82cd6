"""Scaled row softmax, y = softmax(scale * x) over the last axis, float16 in
and out, float32 inside. A block owns `block_M` whole rows in a register
fragment: one max-reduction, exp2 with the scale folded into log2(e), one
sum-reduction (the attention softmax without the online rescaling).

    python examples/softmax/softmax.py [--target cpu|cuda] [--rows R --cols C]
"""

import argparse
import math

import numpy as np

import tilelang_mlir as tl
import tilelang_mlir.language as T
from tilelang_mlir.testing import relative_error, to_device, to_numpy


def softmax(M, N, scale=1.0, block_M=4, dtype="float16"):
    log2e_scale = scale * math.log2(math.e)

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x = T.alloc_fragment((block_M, N), dtype)
            s = T.alloc_fragment((block_M, N), "float32")
            row_max = T.alloc_fragment((block_M,), "float32")
            row_sum = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            for i, j in T.Parallel(block_M, N):
                s[i, j] = T.float32(x[i, j]) * log2e_scale
            T.reduce_max(s, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                s[i, j] = T.exp2(s[i, j] - row_max[i])
            T.reduce_sum(s, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.cast(s[i, j] / row_sum[i], dtype)
            T.copy(x, Y[bx * block_M, 0])

    return main


def programs(M=8192, N=2048):
    return [("softmax_f16", softmax(M, N, scale=0.125), [1])]


def reference(x, scale):
    z = x.astype(np.float64) * scale
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


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
