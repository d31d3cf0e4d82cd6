"""GEMV for decode: y = W x with W (N, K) and x (K,) in float16 or bfloat16,
float32 inside. Memory-bound: every element of W is read once.

Each block owns `block_N` rows of W and walks along K in steps of `block_K`;
`coalesced_width=8` gives each thread 8 consecutive elements of a row, so W
arrives in 16-byte loads. The products are accumulated per thread and
reduced across the threads once, at the end (`gemv` in
python/tilelang_mlir/kernels/gemv.py).

    python examples/dequant/gemv.py [--target cpu|cuda] [--n N --k K] [--dtype float16|bfloat16]
"""

import argparse

import torch

import tilelang_mlir as tl
from tilelang_mlir.kernels.gemv import gemv, reference
from tilelang_mlir.testing import relative_error, to_device


def programs(N=8192, K=8192):
    return [("gemv_f16", gemv(N, K), [2]), ("gemv_bf16", gemv(N, K, dtype="bfloat16"), [2])]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--k", type=int, default=8192)
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    args = parser.parse_args(argv)
    N, K = args.n, args.k
    kernel = tl.compile(gemv(N, K, dtype=args.dtype), out_idx=[2], target=args.target)
    tdt = getattr(torch, args.dtype)
    w = to_device(torch.randn(N, K).to(tdt), kernel.device)
    x = to_device(torch.randn(K).to(tdt), kernel.device)
    err = relative_error(kernel(w, x), reference(w, x))
    seconds = kernel.time(w, x)
    print(f"target {kernel.target}: y = W x, W {N}x{K} {args.dtype}, relative error {err:.1e}, "
          f"{seconds * 1e6:.1f} us ({(N * K + K + N) * 2 / seconds / 1e9:.0f} GB/s)")
    if not err < 1e-2:
        raise SystemExit(f"FAILED: relative error {err:.1e}")
    return err


if __name__ == "__main__":
    main()
