"""DeepSeek MLA decode: one query token per sequence, `heads` query heads
sharing one latent KV head, over a paged KV cache, split along the cache.

The programs are in python/tilelang_mlir/kernels/attention/mla_decode.py:
the split kernel `mla_decode_split` (`block_H` heads of one sequence, one
share of its KV tiles; the score is q_nope . c_kv + q_pe . k_pe, the output
the softmax-weighted sum of c_kv) and the combine kernel
`mla_decode_combine`; `MlaDecode` chains them. `--scores` picks how the two
warpgroups share the score tile (split: each computes half, exchanged
through shared memory; replicate: each computes all of it). This script
checks O against PyTorch and prints the time.

    python examples/attention/mla_decode.py [--target cpu|cuda] [--batch B --heads H
        --cache N --splits S --block-n 64|32 --stages N --scores split|replicate
        --dtype float16|bfloat16]
"""

import argparse

import torch

from tilelang_mlir.kernels.attention.mla_decode import (AMPERE, DPE, DV, MlaDecode,
                                                        make_inputs, mla_decode_combine,
                                                        mla_decode_split, reference)
from tilelang_mlir.testing import relative_error, to_device


def programs(batch=64, heads=128, cache=8192, num_splits=4):
    """(name, program, out_idx) of every kernel of this example (CI compiles
    them for sm_80 and sm_90a; test_mla_decode.py compiles the Hopper
    configuration for sm_90a)."""
    pages = cache // 64
    return [("mla_split", mla_decode_split(batch, heads, batch * pages, pages, num_splits,
                                           **AMPERE), [5, 6]),
            ("mla_combine", mla_decode_combine(batch, heads, num_splits), [2])]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="auto")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--heads", type=int, default=128)
    parser.add_argument("--cache", type=int, default=4096, help="longest cache length")
    parser.add_argument("--splits", type=int, default=4)
    parser.add_argument("--block-n", type=int, default=64, help="KV tokens per step")
    parser.add_argument("--stages", type=int, default=2)
    parser.add_argument("--scores", default="split", choices=["split", "replicate"],
                        help="how both warpgroups get the scores (see above)")
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    args = parser.parse_args(argv)
    B, H = args.batch, args.heads
    # Cache lengths up to --cache, not multiples of the page size.
    lens = [max(1, args.cache - 37 * b) for b in range(B)]
    torch_dtype = getattr(torch, args.dtype)
    inputs = make_inputs(B, H, lens, dtype=torch_dtype)
    num_pages, max_pages = inputs[2].shape[0], inputs[3].shape[1]
    kernel = MlaDecode(B, H, num_pages, max_pages, args.splits, target=args.target,
                       dtype=args.dtype, block_N=args.block_n, num_stages=args.stages,
                       scores=args.scores)
    dev = [to_device(x, kernel.device) for x in inputs]
    o = kernel(*dev)  # (without a GPU, a CUDA kernel stops here)
    torch.backends.cuda.matmul.allow_tf32 = False
    err = relative_error(o, reference(*dev))
    seconds = kernel.split.time(*dev) + kernel.combine.time(*kernel.split(*dev))
    tokens = sum(lens)
    flop = 2 * H * tokens * (DV + DPE + DV)
    cache_bytes = tokens * (DV + DPE) * torch_dtype.itemsize
    print(f"target {kernel.target}: MLA decode {args.dtype} B={B} H={H} cache<={args.cache} "
          f"splits={args.splits}, relative error {err:.1e}, {seconds * 1e3:.3f} ms "
          f"({flop / seconds / 1e12:.1f} TFLOP/s, {cache_bytes / seconds / 1e9:.0f} GB/s of cache)")
    if not err < 1e-2:
        raise SystemExit(f"FAILED: relative error {err:.1e}")
    return err


if __name__ == "__main__":
    main()
